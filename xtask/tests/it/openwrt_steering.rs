//! The packet steering the hand-written profiles run as `"openwrt"`
//! ([`steering::builtin`]) against what reading the OpenWrt fixture gives
//! ([`steering::read`]): the built-in table is a copy of the snapshot's
//! base files and netifd's defaults, and this test fails when the two
//! part, for every target file of the repository with a lab.

use crate::common::openwrt_fixture;

use openwrt_fixture::Fixture;
use xtask::inputs::openwrt::steering::{self, OpenwrtSteering};
use xtask::inputs::openwrt::{Checkout, OpenwrtTarget};
use xtask::inputs::steering::CpuMask;
use xtask::util::layout::Layout;

#[test]
fn the_built_in_steering_of_every_target_is_what_the_fixture_says() {
    let Some(fx) = Fixture::unpack() else { return };
    let checkout = Checkout::open(&fx.root).unwrap();
    let layout = Layout::from_manifest_dir();
    let targets = xtask::inputs::targets::load_all(&layout.targets_dir()).unwrap();
    let mut compared = Vec::new();
    // Only a target with a lab runs steering (arm-tiny's `bcm53xx/tiny`
    // is no OpenWrt subtarget).
    for target in targets.iter().filter(|t| t.lab.is_some()) {
        let Some(built_in) = steering::builtin(&target.openwrt) else {
            continue;
        };
        let router = OpenwrtTarget::resolve(&checkout, &target.openwrt)
            .unwrap_or_else(|e| panic!("{}: {e:#}", target.name));
        let read = steering::read(&checkout, &router, &target.kernel)
            .unwrap_or_else(|e| panic!("{}: {e:#}", target.name));
        match (&built_in, &read) {
            // The reasons are worded for their source; off is off.
            (OpenwrtSteering::Off { .. }, OpenwrtSteering::Off { .. }) => {}
            _ => assert_eq!(built_in, read, "{} ({})", target.name, target.openwrt),
        }
        compared.push((target.name.clone(), read));
    }
    // The two SoCs with two cores are on, each its own way.
    let on = |name: &str| compared.iter().find(|(n, _)| n == name).map(|(_, s)| s);
    assert!(
        matches!(
            on("bcm53xx"),
            Some(OpenwrtSteering::Platform {
                lan_rps: CpuMask(2),
                wan_rps: CpuMask(0),
                ..
            })
        ),
        "{compared:?}"
    );
    assert!(
        matches!(
            on("ramips-mt7621"),
            Some(OpenwrtSteering::Netifd {
                threaded_napi: Some(_),
                ..
            })
        ),
        "{compared:?}"
    );
    assert!(
        matches!(on("ath79"), Some(OpenwrtSteering::Off { .. })),
        "{compared:?}"
    );
}
