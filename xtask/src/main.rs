//! `cargo xtask`: a thin command line over the `xtask` library.

mod cli;

use anyhow::{Context, Result};
use clap::Parser;
use xshell::Shell;

use cli::{Cli, Command, FlagsCommand};
use xtask::build::{self, kbuild::KernelTree, BuildOptions};
use xtask::host::{selftest, setup};
use xtask::inputs::{kernel_source, targets, variants};
use xtask::patches::extra_optimization;
use xtask::util::layout::Layout;
use xtask::util::lock::Wait;

fn main() {
    if let Err(e) = run(Cli::parse()) {
        eprintln!("error: {e:#}");
        std::process::exit(1);
    }
}

fn run(cli: Cli) -> Result<()> {
    let layout = Layout::from_manifest_dir();
    let sh = Shell::new().context("creating a shell")?;
    match cli.command {
        Command::Build(args) => {
            let all_targets = targets::load_all(&layout.targets_dir())?;
            let chosen = targets::select(&all_targets, &args.targets)?;
            let all_variants = variants::load(&layout.variants_file(), &layout.patches_dir())?;
            let names = if args.variants.is_empty() {
                vec![variants::BASELINE.to_string()]
            } else {
                args.variants
            };
            let chosen_variants = variants::select(&all_variants, &names)?;
            let jobs = build::plan::jobs(&chosen, &chosen_variants);
            let options = BuildOptions {
                jobs: args
                    .jobs
                    .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get())),
                verbose: args.verbose,
                rebuild: if args.force {
                    build::Rebuild::Always
                } else {
                    build::Rebuild::IfChanged
                },
                wait: if args.no_wait { Wait::No } else { Wait::Yes },
            };
            let backend = KernelTree::new(layout.clone(), args.kernel_src);
            let plan = build::plan::plan(&sh, &layout, &backend, &jobs)?;
            let outcomes = build::run(&sh, &layout, &backend, &plan, options)?;
            println!(
                "{} job(s) done; results in {}",
                outcomes.len(),
                layout.results_root().display()
            );
        }
        Command::Flags(FlagsCommand::Set {
            variant,
            kernel_src,
        }) => {
            let all = variants::load(&layout.variants_file(), &layout.patches_dir())?;
            let variant = variants::select(&all, &[variant])?.remove(0);
            for (kver, dir) in extra_optimization::pending_dirs(&layout.patches_dir())? {
                let makefile = kernel_source::top_makefile_for_series(&sh, &kver, &kernel_src)?;
                let changed = extra_optimization::write_patch(&dir, &makefile, &variant)?;
                println!(
                    "{}: {}",
                    dir.join(extra_optimization::PATCH_NAME).display(),
                    if changed { "rewritten" } else { "unchanged" }
                );
            }
        }
        Command::Flags(FlagsCommand::List) => {
            for v in variants::load(&layout.variants_file(), &layout.patches_dir())? {
                println!("{}: {}", v.name, v.description);
                println!("    -Os branch: {}", v.os_flags);
                println!("    -O2 branch: {}", v.o2_flags);
                for p in &v.patches {
                    println!("    patch: {}", p.display());
                }
                for k in &v.kconfig {
                    println!("    kconfig: {k}");
                }
            }
        }
        Command::Targets => {
            for t in targets::load_all(&layout.targets_dir())? {
                let mut names = vec![t.openwrt.clone()];
                names.extend(t.aliases.iter().cloned());
                println!(
                    "{:<16} {:<10} {:<4} {:<20} {}{}",
                    t.name,
                    t.soc,
                    t.arch,
                    t.cross_compile,
                    names.join(", "),
                    if t.in_all { "" } else { "  (not in `all`)" }
                );
            }
        }
        Command::Setup(args) => {
            let all_targets = targets::load_all(&layout.targets_dir())?;
            let chosen = if args.targets.is_empty() {
                all_targets
            } else {
                targets::select(&all_targets, &args.targets)?
            };
            let mut packages = setup::packages(&chosen);
            if args.tests {
                packages.extend(selftest::TEST_PACKAGES.iter().map(|p| p.to_string()));
                packages.sort();
                packages.dedup();
            }
            if args.print_only {
                println!(
                    "apt-get install -y --no-install-recommends --no-upgrade {}",
                    packages.join(" ")
                );
            } else if setup::install(&sh, &packages)? {
                println!("installed: {}", packages.join(" "));
            }
        }
        Command::Patches(command) => xtask::patches::stack::commands::run(&sh, &layout, command)?,
        Command::Test { jobs } => selftest::run(&sh, jobs)?,
        Command::SizeReport(args) => xtask::report::run(
            &layout,
            &args.request(),
            args.format(),
            &args.style(),
            args.output.as_deref(),
        )?,
    }
    Ok(())
}
