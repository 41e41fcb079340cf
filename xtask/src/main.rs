//! `cargo xtask`: a thin command line over the `xtask` library.

mod cli;

use anyhow::{Context, Result};
use clap::Parser;
use xshell::Shell;

use cli::{Cli, Command, FlagsCommand};
use xtask::build::{self, kernel_tree::KernelTree, BuildOptions, Job};
use xtask::paths::Layout;
use xtask::{flags, kernel_src, selftest, setup, targets, variants};

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
            let jobs: Vec<Job> = chosen
                .iter()
                .flat_map(|t| {
                    chosen_variants.iter().map(|v| Job {
                        target: t.clone(),
                        variant: v.clone(),
                    })
                })
                .collect();
            let options = BuildOptions {
                jobs: args
                    .jobs
                    .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get())),
                verbose: args.verbose,
            };
            let backend = KernelTree::new(layout.clone(), args.kernel_src);
            let results = build::run(&sh, &layout, &backend, &jobs, options)?;
            println!(
                "{} build(s) done; results in {}",
                results.len(),
                layout.results_root().display()
            );
        }
        Command::Flags(FlagsCommand::Set {
            variant,
            kernel_src,
        }) => {
            let all = variants::load(&layout.variants_file(), &layout.patches_dir())?;
            let variant = variants::select(&all, &[variant])?.remove(0);
            for (kver, dir) in flags::pending_dirs(&layout.patches_dir())? {
                let makefile = kernel_src::top_makefile_for_series(&sh, &kver, &kernel_src)?;
                let changed = flags::write_patch(&dir, &makefile, &variant)?;
                println!(
                    "{}: {}",
                    dir.join(flags::PATCH_NAME).display(),
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
        Command::Patches(command) => xtask::stack::cli::run(&sh, &layout, command)?,
        Command::Lab(args) => {
            if let Some(dir) = xtask::measure::lab::run(&sh, &layout, &args.request())? {
                println!("lab results: {}", dir.join("lab.json").display());
            }
        }
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
