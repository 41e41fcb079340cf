//! A device's firmware partition from its device tree: where the image
//! Makefile sets neither `KERNEL_SIZE` nor `IMAGE_SIZE` (every bcm53xx
//! device), the flash layout the kernel itself is given says how much
//! room the kernel and the rootfs share.
//!
//! The rule, as the kernel's MTD bindings write a fixed layout
//! (Documentation/devicetree/bindings/mtd/partitions/fixed-partitions.yaml):
//! a node whose `compatible` lists `fixed-partitions` holds one child per
//! partition, each with `reg = <offset size>` in its parent's
//! `#address-cells`/`#size-cells` and a `label` (the node name before `@`
//! without one). The partition labelled `firmware` is the one OpenWrt
//! writes its image to (bcm53xx's TRX, a SEAMA image on D-Link's). A tree
//! whose partitions are found at boot instead (`brcm,bcm947xx-cfe-partitions`,
//! read from the CFE's NVRAM) has no size here.

use anyhow::{anyhow, Result};

/// The label of the partition an OpenWrt image is written to.
pub const FIRMWARE: &str = "firmware";

/// The `firmware` partition of a fixed flash layout.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FirmwarePartition {
    /// Its size, bytes.
    pub bytes: u64,
    /// Its node (`firmware@200000`).
    pub node: String,
}

/// The first partition labelled [`FIRMWARE`] under a `fixed-partitions`
/// node of `dtb` (a flattened device tree), in the tree's order; `None`
/// when there is none (no fixed layout, or one without that label).
///
/// Errors: `dtb` is not a device tree blob the `fdt` crate reads, or the
/// partition's `reg` has no size.
pub fn firmware_partition(dtb: &[u8]) -> Result<Option<FirmwarePartition>> {
    let fdt = fdt::Fdt::new(dtb).map_err(|e| anyhow!("not a device tree blob: {e:?}"))?;
    for node in fdt.all_nodes() {
        let fixed = node
            .compatible()
            .is_some_and(|c| c.all().any(|s| s == "fixed-partitions"));
        if !fixed {
            continue;
        }
        for part in node.children() {
            let label = part
                .property("label")
                .and_then(|p| p.as_str())
                .unwrap_or_else(|| part.name.split('@').next().unwrap_or(part.name));
            if label != FIRMWARE {
                continue;
            }
            let size = part
                .reg()
                .and_then(|mut r| r.next())
                .and_then(|r| r.size)
                .ok_or_else(|| anyhow!("partition {} has no reg size", part.name))?;
            return Ok(Some(FirmwarePartition {
                bytes: size as u64,
                node: part.name.to_string(),
            }));
        }
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use xshell::{cmd, Shell};

    /// `source` compiled by the reference, dtc.
    fn dtb(source: &str) -> Vec<u8> {
        let sh = Shell::new().unwrap();
        let dir = tempfile::tempdir().unwrap();
        let dts = dir.path().join("t.dts");
        std::fs::write(&dts, source).unwrap();
        cmd!(sh, "dtc -q -I dts -O dtb {dts}")
            .output()
            .unwrap()
            .stdout
    }

    const NAND: &str = r#"/dts-v1/;
/ {
    #address-cells = <1>; #size-cells = <1>;
    nand@18028000 {
        reg = <0x18028000 0x600>;
        #address-cells = <1>; #size-cells = <0>;
        nandcs@0 {
            reg = <0>;
            #address-cells = <1>; #size-cells = <1>;
            partitions {
                compatible = "fixed-partitions";
                #address-cells = <1>; #size-cells = <1>;
                boot@0 { label = "boot"; reg = <0x0 0x80000>; read-only; };
                firmware@200000 { label = "firmware"; reg = <0x200000 0x7cc0000>; compatible = "brcm,trx"; };
            };
        };
    };
};
"#;

    #[test]
    fn the_firmware_partition_of_a_fixed_layout_is_found_with_its_size() {
        if !crate::util::test_gate::programs(&[("dtc", "device-tree-compiler")]) {
            return;
        }
        assert_eq!(
            firmware_partition(&dtb(NAND)).unwrap(),
            Some(FirmwarePartition {
                bytes: 0x7cc0000,
                node: "firmware@200000".to_string()
            })
        );
        // Without a label, the node's name stands for it.
        let unlabelled = NAND.replace("label = \"firmware\"; ", "");
        assert_eq!(
            firmware_partition(&dtb(&unlabelled))
                .unwrap()
                .unwrap()
                .bytes,
            0x7cc0000
        );
        // Partitions found at boot (the CFE's), and no firmware label: none.
        let cfe = NAND.replace(
            "compatible = \"fixed-partitions\";",
            "compatible = \"brcm,bcm947xx-cfe-partitions\";",
        );
        assert_eq!(firmware_partition(&dtb(&cfe)).unwrap(), None);
        let other = NAND
            .replace("label = \"firmware\"", "label = \"linux\"")
            .replace("firmware@200000", "linux@200000");
        assert_eq!(firmware_partition(&dtb(&other)).unwrap(), None);
        assert!(firmware_partition(b"not a device tree").is_err());
    }
}
