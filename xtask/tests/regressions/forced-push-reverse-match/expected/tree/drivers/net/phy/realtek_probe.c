// SPDX-License-Identifier: GPL-2.0+

static int rtl8221b_probe(struct phy_device *phydev)
{
	int ret;

	ret = phy_read_mmd(phydev, MDIO_MMD_VEND2, RTL_VND2_PHYSR);
	if (ret < 0)
		return ret;

	return 0;
}

static int rtl8226_probe(struct phy_device *phydev) /* RTL8226 */
{	/* shares the 2.5G code */
	int ret;

	ret = phy_read_mmd(phydev, MDIO_MMD_VEND2, RTL_VND2_PHYSR);
	if (ret < 0)
		return ret;

	return 0;
}

