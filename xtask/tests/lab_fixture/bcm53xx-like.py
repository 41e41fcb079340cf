"""Writes bcm53xx-like.json: a 4-round cache-model lab of bcm53xx's shape,
drawn from known distributions, so that what the report
calls significant can be checked against what is really there. Not a
measurement: the values are normal draws (numpy, seed 20) around these
means, in percent standard deviation, with these true changes of
no-reorder-blocks (the A/A control has none):

  throughput              6.5 Mbit/s, sd 12 %, no change (emulator speed)
  guest_cpu_per_packet    150000 ns/packet, sd 0.6 %, +1 % LAN to WAN only
  guest_insns_per_packet  9000 insns/packet, sd 0.4 %, +1 % LAN to WAN only
  l1i_misses_per_packet   420 misses/packet, sd 3 %, -8 %
  l1d_misses_per_packet   95 misses/packet, sd 2 %, no change

(the figures of a real 4-round bcm53xx lab: Mbit/s with
the emulator's speed, ns/packet +1 % or nothing, L1I misses -6 to -11 %).
Run: python3 bcm53xx-like.py > bcm53xx-like.json
"""
import json
import numpy as np

rng = np.random.default_rng(20)
METRICS = [
    ("throughput", "Mbit/s", 6.5, 12.0, {"lan-to-wan": 0.0, "wan-to-lan": 0.0}, 3),
    ("guest_cpu_per_packet", "ns/packet", 150000.0, 0.6, {"lan-to-wan": 1.0, "wan-to-lan": 0.0}, 1),
    ("guest_insns_per_packet", "insns/packet", 9000.0, 0.4, {"lan-to-wan": 1.0, "wan-to-lan": 0.0}, 1),
    ("l1i_misses_per_packet", "misses/packet", 420.0, 3.0, {"lan-to-wan": -8.0, "wan-to-lan": -8.0}, 2),
    ("l1d_misses_per_packet", "misses/packet", 95.0, 2.0, {"lan-to-wan": 0.0, "wan-to-lan": 0.0}, 2),
]
ARMS = [("baseline", "baseline", False), ("baseline~control", "baseline", True),
        ("no-reorder-blocks", "no-reorder-blocks", False)]
ORDER = [("lan-to-wan", True), ("lan-to-wan", False), ("wan-to-lan", True), ("wan-to-lan", False)]
ROUNDS = 4


def metrics(variant, direction):
    out = []
    for name, unit, mean, sd, change, decimals in METRICS:
        shift = change[direction] if variant == "no-reorder-blocks" else 0.0
        value = mean * (1 + shift / 100) * (1 + sd / 100 * rng.standard_normal())
        out.append({"name": name, "value": round(float(value), decimals), "unit": unit})
    return out


def arm(name, variant, control):
    results = f"/srv/lab/target/xtask/results/bcm53xx-lab/{variant}"
    return {"name": name, "variant": variant, "control": control, "results_dir": results,
            "image": f"{results}/zImage", "image_sha256": ("a" if variant == "baseline" else "b") * 64,
            "config_sha256": "c" * 64, "vmlinux_text": 4412316 if variant == "baseline" else 4443020}


runs, boots, index = [], [], 0
for r in range(ROUNDS):
    for name, variant, _ in ARMS:
        boots.append({"arm": name, "round": r, "boot_seconds": 9.5, "guest_uptime_at_ready": 2.1,
                      "console_log": f"console-r{r}-{name.replace('~', '-')}.log", "qemu_argv": []})
        for warmup, (direction, gro) in [(True, ORDER[0])] + [(False, c) for c in ORDER]:
            runs.append({"index": index, "arm": name, "variant": variant, "round": r,
                         "direction": direction, "gro": gro, "warmup": warmup,
                         "started": f"2026-12-03T09:{index // 6:02d}:{index % 6 * 10:02d}Z",
                         "metrics": metrics(variant, direction)})
            index += 1

geometry = {"size_bytes": 32768, "ways": 4, "line_bytes": 32}
record = {
    "schema": 1, "status": "complete", "target": "bcm53xx", "lab_target": "bcm53xx-lab",
    "started": "2026-12-03T09:00:00Z", "finished": "2026-12-03T10:12:00Z",
    "settings": {"runs": ROUNDS, "duration_seconds": 10, "gro": [True, False],
                 "directions": ["lan-to-wan", "wan-to-lan"], "warmup_runs_per_boot": 1,
                 "base": "baseline", "control": True},
    "qemu": {"binary": "qemu-system-arm",
             "version": "QEMU emulator version 7.2.22 (Debian 1:7.2+dfsg-7+deb12u18+b3)",
             "machine": "vexpress-a9", "cpu": "cortex-a9", "smp": 1,
             "icount": "shift=3,align=off,sleep=on",
             "append": "console=ttyAMA0 rdinit=/init panic=-1 loglevel=6"},
    "initramfs": {"path": "target/xtask/lab/initramfs/armhf.cpio.gz", "sha256": "3" * 64,
                  "size": 4194304, "arch": "armhf", "packages": [], "built": [],
                  "toolchain": []},
    "cache_model": {"icache": geometry, "dcache": geometry,
                    "geometry_from": "targets/bcm53xx.toml [lab.l1]",
                    "plugin_source": "lab/plugin/xtask-cache.c", "plugin_source_sha256": "0" * 64,
                    "plugin_sha256": "1" * 64, "compiler": "gcc (Debian 12.2.0-14) 12.2.0",
                    "qemu_source": "qemu 1:7.2+dfsg-7+deb12u18", "plugin_header_sha256": "2" * 64},
    "arms": [arm(*a) for a in ARMS], "boots": boots, "runs": runs,
}
print(json.dumps(record, indent=2))
