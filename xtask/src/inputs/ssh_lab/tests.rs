use super::*;

const GOOD: &str = r#"
[ssh]
destination = "ssh://root@192.168.1.1:2222"
options = ["StrictHostKeyChecking=no", "UserKnownHostsFile=/dev/null"]
from = "lan"

[router]
lan_interface = "br-lan"
wan_interface = "wan"
wan_address = "203.0.113.1"

[lan]
netns = "lan"

[wan]
interface = "enp3s0"
address = "203.0.113.2/24"
gateway = "203.0.113.1"

[images]
bcm53xx = "images/{variant}.trx"

[timeouts]
reboot_seconds = 900
"#;

fn parse(text: &str) -> Result<SshLabFile> {
    SshLabFile::parse(text, Path::new("/lab"))
}

fn err(text: &str) -> String {
    format!("{:#}", parse(text).unwrap_err())
}

#[test]
fn a_full_file() {
    let f = parse(GOOD).unwrap();
    let d = f.destination.as_ref().unwrap();
    assert_eq!((d.login().as_str(), d.port), ("root@192.168.1.1", 2222));
    assert_eq!(f.from, SshFrom::Lan);
    assert_eq!(f.router.gro_interfaces, ["br-lan", "wan"]);
    assert_eq!(f.router.interrupt_names, ["br-lan", "wan"]);
    assert_eq!(f.lan.place, SshPlace::Netns("lan".to_string()));
    assert_eq!(f.wan.place, SshPlace::Interface("enp3s0".to_string()));
    assert_eq!(
        f.wan.address,
        Some(("203.0.113.2".parse().unwrap(), Some(24)))
    );
    assert_eq!(f.timeouts.reboot_seconds, 900);
    assert_eq!(f.timeouts.connect_seconds, 10);
    let mut f = f;
    f.path = PathBuf::from("/lab/lab-ssh.toml");
    assert_eq!(
        f.image("bcm53xx", "baseline", Path::new("/r")),
        Some(PathBuf::from("/lab/images/baseline.trx"))
    );
    assert_eq!(f.image("ath79", "baseline", Path::new("/r")), None);
}

#[test]
fn names_that_would_reach_a_shell_are_refused() {
    let e = err(&GOOD.replace("\"br-lan\"", "\"br-lan;reboot\""));
    assert!(e.contains("lan_interface") && e.contains("';'"), "{e}");
    let e = err(&GOOD.replace("\"wan\"\n", "\"wan $(id)\"\n"));
    assert!(e.contains("wan_interface"), "{e}");
    let e = err(&GOOD.replace("\"br-lan\"", "\"a-very-long-name0\""));
    assert!(e.contains("1 to 15"), "{e}");
    let e = err(&GOOD.replace("netns = \"lan\"", "netns = \"../etc\""));
    assert!(e.contains("[lan] netns"), "{e}");
    let e = err(&GOOD.replace("ssh://root@192.168.1.1:2222", "ssh://root@-oProxyCommand=x"));
    assert!(e.contains("destination"), "{e}");
    let e = err(&GOOD.replace("\"StrictHostKeyChecking=no\"", "\"ProxyCommand=nc %h %p\""));
    assert!(e.contains("ProxyCommand"), "{e}");
}

#[test]
fn endpoints_are_complete() {
    let e = err(&GOOD.replace("netns = \"lan\"", "netns = \"lan\"\ninterface = \"eth1\""));
    assert!(e.contains("exactly one"), "{e}");
    let e = err(&GOOD.replace("address = \"203.0.113.2/24\"", "address = \"203.0.113.2\""));
    assert!(e.contains("A.B.C.D/LEN"), "{e}");
    let e = err(&GOOD.replace("address = \"203.0.113.2/24\"\n", ""));
    assert!(
        e.contains("needs address") || e.contains("A.B.C.D/LEN"),
        "{e}"
    );
    let e = err(&GOOD.replace("/24", "/33"));
    assert!(e.contains("prefix length"), "{e}");
    let same = GOOD.replace(
        "interface = \"enp3s0\"\naddress = \"203.0.113.2/24\"\ngateway = \"203.0.113.1\"",
        "netns = \"lan\"\naddress = \"203.0.113.2\"",
    );
    assert!(err(&same).contains("same namespace"));
    let e = err(&GOOD.replace("wan_address = \"203.0.113.1\"", "wan_address = \"wan\""));
    assert!(e.contains("wan_address"), "{e}");
}

#[test]
fn unknown_keys_templates_and_timeouts() {
    let e = err(&GOOD.replace("[timeouts]", "[timeouts]\nforever = 1"));
    assert!(e.contains("forever"), "{e}");
    let e = err(&GOOD.replace("{variant}.trx", "{target}.trx"));
    assert!(e.contains("only {variant}"), "{e}");
    let e = err(&GOOD.replace("reboot_seconds = 900", "reboot_seconds = 0"));
    assert!(e.contains("1 to 3600"), "{e}");
    let e = err(&GOOD.replace("from = \"lan\"", "from = \"router\""));
    assert!(e.contains("from") || e.contains("router"), "{e}");
}

#[test]
fn the_identity_must_exist() {
    let dir = tempfile::tempdir().unwrap();
    let text = GOOD.replace("from = \"lan\"", "identity = \"key\"");
    let e = format!("{:#}", SshLabFile::parse(&text, dir.path()).unwrap_err());
    assert!(e.contains("not a file"), "{e}");
    std::fs::write(dir.path().join("key"), "k").unwrap();
    let f = SshLabFile::parse(&text, dir.path()).unwrap();
    assert_eq!(f.identity, Some(dir.path().join("key")));
    assert_eq!(f.from, SshFrom::Host);
}
