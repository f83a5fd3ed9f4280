//! The documentation the binary generates, without a ZooKeeper: `--help`
//! and `--version` (exit 0), the man pages (clap_mangen) and the shell
//! completion scripts (clap_complete).

#![allow(clippy::unwrap_used)] // tests assert by panicking

mod common;

use std::process::Command;

use common::{zklock, Dir};

#[test]
fn help_and_version_exit_0_and_say_what_matters() {
    let d = Dir::new("help");
    let o = zklock(&d, "help", &["--help"]);
    assert_eq!((o.code, o.stderr.as_str()), (0, ""), "{o:?}");
    for needle in [
        "EXIT STATUS",
        "ZKLOCK_FENCING_TOKEN",
        "ZKLOCK_HOSTS",
        "--lost-signal",
        "zklock list",
        "zklock hold",
        "LOCK KINDS",
    ] {
        assert!(o.stdout.contains(needle), "--help mentions {needle}: {}", o.stdout);
    }
    let o = zklock(&d, "run-help", &["run", "--help"]);
    assert_eq!(o.code, 0, "{o:?}");
    // Words, whatever the line breaks.
    let words = o.stdout.split_whitespace().collect::<Vec<_>>().join(" ");
    for needle in ["--nonblock", "--conflict-exit-code", "--process-group", "--shared", "use -s and -x together"] {
        assert!(words.contains(needle), "run --help mentions {needle}: {}", o.stdout);
    }
    let o = zklock(&d, "hold-help", &["help", "hold"]);
    assert_eq!(o.code, 0, "{o:?}");
    assert!(o.stdout.contains("stdin") && o.stdout.contains("--json"), "{}", o.stdout);
    let o = zklock(&d, "version", &["--version"]);
    assert_eq!((o.code, o.stdout.trim()), (0, concat!("zklock ", env!("CARGO_PKG_VERSION"))), "{o:?}");
}

#[test]
fn the_man_pages_render_with_every_option() {
    let d = Dir::new("man");
    let o = zklock(&d, "man", &["man"]);
    assert_eq!(o.code, 0, "{o:?}");
    assert!(o.stdout.contains(".TH zklock 1"), "{}", o.stdout);
    // roff escapes '-' as "\-".
    for needle in [".SH \"EXIT STATUS\"", ".SH SIGNALS", ".SH \"LOCK KINDS\"", "zklock\\-run(1)", "zklock\\-hold(1)"] {
        assert!(o.stdout.contains(needle), "zklock.1 has {needle}: {}", o.stdout);
    }
    let dir = d.path("pages");
    let o = zklock(&d, "man-dir", &["man", "--dir", dir.to_str().unwrap()]);
    assert_eq!(o.code, 0, "{o:?}");
    let mut pages: Vec<String> =
        std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    pages.sort();
    assert_eq!(
        pages,
        [
            "zklock-completions.1",
            "zklock-fence-check.1",
            "zklock-hold.1",
            "zklock-lead.1",
            "zklock-list.1",
            "zklock-run.1",
            "zklock-shared-count.1",
            "zklock.1"
        ]
    );
    assert!(d.read("pages/zklock-fence-check.1").contains("ZKLOCK_NODE_PATH"));
    assert!(d.read("pages/zklock-shared-count.1").contains("SharedCount"));
    assert!(d.read("pages/zklock-run.1").contains("\\-\\-shared\\-count"));
    let run = d.read("pages/zklock-run.1");
    for needle in
        ["\\-\\-nonblock", "\\-\\-conflict\\-exit\\-code", "\\-\\-shared", "\\-\\-process\\-group", ".SH WAITING"]
    {
        assert!(run.contains(needle), "zklock-run.1 has {needle}: {run}");
    }
    assert!(d.read("pages/zklock-hold.1").contains("\\-\\-json"));
    // man(1) formats it without complaint, where it is installed.
    if let Ok(out) = Command::new("man").arg("-l").arg(dir.join("zklock-run.1")).env("MANWIDTH", "80").output() {
        if out.status.success() {
            let text = String::from_utf8_lossy(&out.stdout);
            assert!(text.contains("--nonblock"), "{text}");
        }
    }
}

#[test]
fn completions_name_the_subcommands_and_options() {
    let d = Dir::new("completions");
    let o = zklock(&d, "bash", &["completions", "bash"]);
    assert_eq!(o.code, 0, "{o:?}");
    for needle in ["zklock", "run", "lead", "hold", "list", "completions", "--nonblock", "--hosts"] {
        assert!(o.stdout.contains(needle), "bash completion has {needle}");
    }
    assert!(!o.stdout.contains("zklock__man"), "the hidden man subcommand is not completed");
    // The script is valid bash.
    std::fs::write(d.path("zklock.bash"), &o.stdout).unwrap();
    let syntax = Command::new("bash").arg("-n").arg(d.path("zklock.bash")).output().unwrap();
    assert!(syntax.status.success(), "{}", String::from_utf8_lossy(&syntax.stderr));
    let o = zklock(&d, "zsh", &["completions", "zsh"]);
    assert!(o.code == 0 && o.stdout.starts_with("#compdef zklock") && o.stdout.contains("hold"), "{o:?}");
    let o = zklock(&d, "fish", &["completions", "fish"]);
    assert!(o.code == 0 && o.stdout.contains("complete -c zklock") && o.stdout.contains("hold"), "{o:?}");
    for shell in ["elvish", "powershell"] {
        let o = zklock(&d, shell, &["completions", shell]);
        assert!(o.code == 0 && o.stdout.contains("hold"), "{o:?}");
    }
    let o = zklock(&d, "none", &["completions"]);
    assert_eq!(o.code, 64, "{o:?}");
}

#[test]
fn every_line_of_the_help_sections_is_indented_alike() {
    let d = Dir::new("help-indent");
    let o = zklock(&d, "help", &["--help"]);
    assert_eq!(o.code, 0, "{o:?}");
    let headings = ["DURATIONS", "ENVIRONMENT", "LOCK KINDS", "SIGNALS", "EXIT STATUS"];
    let lines: Vec<&str> = o.stdout.lines().collect();
    for heading in headings {
        let at = lines.iter().position(|l| *l == heading).unwrap_or_else(|| panic!("no {heading}: {}", o.stdout));
        let body: Vec<&str> =
            lines[at + 1..].iter().copied().take_while(|l| !headings.contains(l)).filter(|l| !l.is_empty()).collect();
        assert!(!body.is_empty(), "{heading} has text");
        for line in body {
            assert!(line.starts_with("  "), "under {heading}, {line:?} is not indented like the rest:\n{}", o.stdout);
        }
    }
}
