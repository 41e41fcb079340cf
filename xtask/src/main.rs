//! `cargo xtask`: a thin command line over the `xtask` library. Every
//! command-line type is in [`cli`]; each match arm here is one library call.

mod cli;

use anyhow::{Context, Result};
use xshell::Shell;

use cli::{
    changed_files, until, BenchCommand, Cli, Command, ConfigCommand, FlagsCommand, PatchesCommand,
    ResultsCommand,
};
use xtask::patches::commands as stack;
use xtask::patches::openwrt_sync::SyncDirection;
use xtask::util::layout::Layout;
use xtask::{bench, host, inputs, kernel_build, lab, patches, report, results};

fn main() {
    if let Err(e) = run(cli::parse()) {
        // An error may quote a file's strings (an arm name, a reason):
        // their escape sequences are shown, not run by the terminal.
        eprintln!(
            "error: {}",
            xtask::util::text::printable_lines(&format!("{e:#}"))
        );
        std::process::exit(1);
    }
}

fn run(cli: Cli) -> Result<()> {
    let layout = Layout::from_manifest_dir();
    let sh = Shell::new().context("creating a shell")?;
    match cli.command {
        Command::Build(args) => kernel_build::command::run(&sh, &layout, &args.request()),
        Command::Flags(FlagsCommand::Set {
            variant,
            kernel_src,
        }) => patches::extra_optimization::set_command(&sh, &layout, &variant, &kernel_src),
        Command::Flags(FlagsCommand::List) => {
            inputs::variants::print_list(&layout.variants_file(), &layout.patches_dir())
        }
        Command::Targets => inputs::targets::print_list(&layout.targets_dir()),
        Command::Setup(args) => host::setup::command(&sh, &layout, &args.request()),
        Command::Config(ConfigCommand::Show(args)) => inputs::openwrt::kconfig::show(
            &args.openwrt,
            &layout.targets_dir(),
            &args.target,
            args.kernel.as_deref(),
        ),
        Command::Patches(command) => match command {
            PatchesCommand::Push { series, all, name } => {
                stack::push(&sh, &layout, &series.options(), until(all, name))
            }
            PatchesCommand::Pop {
                series,
                all,
                force,
                name,
            } => stack::pop(
                &sh,
                &layout,
                &series.options(),
                until(all, name),
                changed_files(force),
            ),
            PatchesCommand::Status { series } => stack::status(&sh, &layout, &series.options()),
            PatchesCommand::Refresh { series, name } => {
                stack::refresh(&sh, &layout, &series.options(), name.as_deref())
            }
            PatchesCommand::Rebase(args) => stack::rebase(&sh, &layout, &args.request()),
            PatchesCommand::Import(args) => {
                stack::sync(&layout, &args.options(), SyncDirection::Import)
            }
            PatchesCommand::Export(args) => {
                stack::sync(&layout, &args.options(), SyncDirection::Export)
            }
            PatchesCommand::SizeBisect(args) => {
                xtask::kernel_build::size_bisect::run(&sh, &layout, &args.request())
            }
        },
        Command::Results(ResultsCommand::Export {
            targets,
            variants,
            output,
        }) => results::archive::export(&sh, &layout, &targets, &variants, &output),
        Command::Results(ResultsCommand::Merge { files }) => {
            results::archive::merge(&layout, &files).map(drop)
        }
        Command::Bench(BenchCommand::Build(args)) => {
            bench::build::run(&sh, &layout, &args.request()).map(drop)
        }
        Command::Bench(BenchCommand::Symbols(args)) => {
            bench::symbols::run(&sh, &layout, &args.request()).map(drop)
        }
        Command::Bench(BenchCommand::Lab(args)) => {
            bench::lab::run(&sh, &layout, &args.request()).map(drop)
        }
        Command::Bench(BenchCommand::Verdicts(args)) => {
            report::lab::calibrate::run(&args.request())
        }
        Command::Bench(BenchCommand::Patches(args)) => {
            bench::patches::run(&sh, &layout, &args.options())
        }
        Command::Lab(args) => match args.mode()? {
            cli::LabMode::Forwarding(request) => lab::command(&sh, &layout, &request),
            cli::LabMode::Host(request) => lab::host_lab::command(&layout, &request),
            cli::LabMode::KnownAnswers(request) => {
                lab::known_answer::command(&sh, &layout, &request).map(drop)
            }
        },
        Command::Experiment(args) => xtask::experiment::command(&sh, &layout, &args.request()),
        Command::Test { jobs } => host::selftest::run(&sh, jobs),
        Command::SizeReport(args) => report::run(
            &args.layout(&layout),
            &args.request()?,
            args.format,
            &args.style(),
            args.output.as_deref(),
        ),
    }
}
