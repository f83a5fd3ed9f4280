//! Documentation generated from the command line of [`crate::args`]: shell
//! completion scripts (clap_complete) and man pages (clap_mangen), so that
//! they never disagree with `--help`. `make cli` writes them to target/cli.

use std::io::{self, Write};
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use clap::CommandFactory as _;
use clap_mangen::roff::{roman, Roff};
use clap_mangen::Man;

use crate::args::{Cli, SECTIONS};
use crate::exit;

/// `zklock completions SHELL`: the completion script on stdout.
pub(crate) fn completions(shell: clap_complete::Shell) -> i32 {
    let mut out = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), "zklock", &mut out);
    crate::write_stdout(&out)
}

/// `zklock man`: zklock(1) on stdout; with `--dir DIR`, zklock.1 and a page
/// per visible subcommand (zklock-run.1, ...) written into DIR (made if
/// need be).
pub(crate) fn man(dir: Option<&Path>) -> i32 {
    let mut cmd = Cli::command().disable_help_subcommand(true);
    cmd.build();
    let Some(dir) = dir else {
        let mut out = Vec::new();
        return match main_page(&cmd, &mut out) {
            Ok(()) => crate::write_stdout(&out),
            Err(e) => {
                note!("cannot render the man page: {e}");
                exit::INTERNAL
            },
        };
    };
    let written = std::fs::create_dir_all(dir)
        .and_then(|()| std::fs::File::create(dir.join("zklock.1")))
        .and_then(|mut f| main_page(&cmd, &mut f))
        .and_then(|()| {
            for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
                page(sub.clone()).generate_to(dir)?;
            }
            Ok(())
        });
    match written {
        Ok(()) => exit::OK,
        Err(e) => {
            note!("cannot write the man pages to {}: {e}", dir.display());
            exit::INTERNAL
        },
    }
}

/// A page of zklock's manual for `cmd` (built), dated today or, for a
/// reproducible build, `$SOURCE_DATE_EPOCH`.
fn page(cmd: clap::Command) -> Man {
    let epoch = std::env::var("SOURCE_DATE_EPOCH").ok().and_then(|s| s.parse::<u64>().ok());
    let when = epoch.map_or_else(SystemTime::now, |secs| UNIX_EPOCH + Duration::from_secs(secs));
    let date = humantime::format_rfc3339_seconds(when).to_string();
    Man::new(cmd)
        .date(date.get(..10).unwrap_or(&date))
        .source(format!("zklock {}", env!("CARGO_PKG_VERSION")))
        .manual("User Commands")
}

/// zklock(1): clap_mangen's sections of the top-level command (its
/// subcommands listed as zklock-run(1) and so on), then durations, lock
/// kinds, environment, signals and exit status, as `zklock --help` shows them.
fn main_page(cmd: &clap::Command, w: &mut dyn Write) -> io::Result<()> {
    let man = page(cmd.clone());
    man.render_title(w)?;
    man.render_name_section(w)?;
    man.render_synopsis_section(w)?;
    man.render_description_section(w)?;
    man.render_options_section(w)?;
    man.render_subcommands_section(w)?;
    let mut roff = Roff::new();
    for (title, text) in SECTIONS {
        roff.control("SH", [title]);
        // Preformatted: the sections are laid out in columns.
        roff.control("nf", []);
        for line in text.lines() {
            roff.text([roman(line.strip_prefix("  ").unwrap_or(line))]);
        }
        roff.control("fi", []);
    }
    roff.to_writer(w)?;
    man.render_version_section(w)
}
