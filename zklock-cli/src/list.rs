//! `zklock list`: the queue of a lock path, holders first.

use serde::Serialize;
use zklock_core::{Client, Participant};

use crate::args::ListOptions;

/// Runs `zklock list` and returns the exit code.
pub(crate) fn list(opts: ListOptions) -> i32 {
    let hosts = match crate::checked_target(&opts.connection, &opts.path) {
        Ok(h) => h,
        Err(code) => return code,
    };
    // `list` creates nothing: the ACL (still checked as written) is not
    // the client's, so no connect-time check refuses it (an outside test
    // got 77 from `list` under an ACL naming another password).
    let options = match crate::connect_options(&opts.connection, &hosts) {
        Ok((options, _)) => options.acl(zklock_core::Acl::open()),
        Err(code) => return code,
    };
    let client = match Client::connect(options) {
        Ok(c) => c,
        Err(e) => return crate::connect_error(&hosts, &e),
    };
    // A semaphore's leases queue under PATH/leases; the first N hold.
    let leases = format!("{}/leases", opts.path.trim_end_matches('/'));
    let parent = if opts.permits.is_some() { &leases } else { &opts.path };
    let result = client.participants(parent).map(|mut q| {
        if let Some(n) = opts.permits {
            for (i, p) in q.iter_mut().enumerate() {
                p.holds = i < n;
            }
        }
        q
    });
    let semaphore_hint = match &result {
        Ok(q) if q.is_empty() && opts.permits.is_none() => client.participants(&leases).is_ok_and(|l| !l.is_empty()),
        _ => false,
    };
    client.close();
    let queue = match result {
        Ok(q) => q,
        Err(e) => return crate::zk_error(&format!("cannot list lock {}", opts.path), &e),
    };
    if semaphore_hint {
        note!("{} has no lock nodes but has leases: it is a semaphore; list it with --permits N", opts.path);
    }
    let text = if opts.json { json(&opts.path, parent, &queue) } else { table(&opts.path, &queue) };
    crate::write_stdout(text.as_bytes())
}

/// `HOLDS` or `WAITS`.
fn state_name(p: &Participant) -> &'static str {
    if p.holds {
        "HOLDS"
    } else {
        "WAITS"
    }
}

/// Node data for the table (the last column, so it may hold spaces):
/// invalid UTF-8 replaced, control characters escaped, `-` when empty.
fn shown_data(data: &[u8]) -> String {
    if data.is_empty() {
        return "-".to_owned();
    }
    String::from_utf8_lossy(data)
        .chars()
        .map(|c| if c.is_control() { c.escape_default().to_string() } else { c.to_string() })
        .collect()
}

/// One line per participant under a header, columns aligned.
fn table(_path: &str, queue: &[Participant]) -> String {
    let mut rows = vec![["POS", "STATE", "KIND", "SEQUENCE", "SESSION", "NODE", "DATA"].map(str::to_owned)];
    for (i, p) in queue.iter().enumerate() {
        rows.push([
            (i + 1).to_string(),
            state_name(p).to_owned(),
            p.kind.name().to_owned(),
            p.sequence.to_string(),
            format!("{:#x}", p.session_id),
            p.name.clone(),
            shown_data(&p.data),
        ]);
    }
    let mut widths = [0usize; 7];
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    for row in &rows {
        let mut line = String::new();
        for (i, (cell, w)) in row.iter().zip(widths).enumerate() {
            if i + 1 == row.len() {
                line.push_str(cell);
            } else {
                line.push_str(&format!("{cell:<w$}  "));
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// `zklock list --json`: the lock path and its queue.
#[derive(Serialize)]
struct Queue<'a> {
    /// The lock path as given.
    path: &'a str,
    /// The participants, holders first.
    participants: Vec<Entry>,
}

/// One participant in `zklock list --json`.
#[derive(Serialize)]
struct Entry {
    /// 1 for the first in the queue.
    position: usize,
    /// `HOLDS` or `WAITS`.
    state: &'static str,
    /// Whether it holds the lock.
    holds: bool,
    /// `READER` or `WRITER`.
    kind: &'static str,
    /// The node's sequence number.
    sequence: i64,
    /// The owner session, hex with `0x`.
    session_id: String,
    /// The node's data (invalid UTF-8 replaced).
    data: String,
    /// The node's name.
    node: String,
    /// The node's path.
    node_path: String,
}

/// One JSON object on one line: `{"path": ..., "participants": [...]}`;
/// `parent` holds the nodes (`PATH/leases` for a semaphore).
fn json(path: &str, parent: &str, queue: &[Participant]) -> String {
    let participants = queue
        .iter()
        .enumerate()
        .map(|(i, p)| Entry {
            position: i + 1,
            state: state_name(p),
            holds: p.holds,
            kind: p.kind.name(),
            sequence: p.sequence,
            session_id: format!("{:#x}", p.session_id),
            data: String::from_utf8_lossy(&p.data).into_owned(),
            node: p.name.clone(),
            node_path: format!("{parent}/{}", p.name),
        })
        .collect();
    let mut out = serde_json::to_string(&Queue { path, participants })
        .expect("a struct of strings, numbers and booleans is always valid JSON");
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use zklock_core::NodeKind;

    fn p(name: &str, holds: bool, kind: NodeKind, data: &[u8]) -> Participant {
        Participant { name: name.into(), sequence: 7, kind, holds, data: data.to_vec(), session_id: 0x1234 }
    }

    #[test]
    fn json_escapes_and_shapes() {
        let out = json("/l", "/l", &[p("n", false, NodeKind::Reader, b"a\"b\\c\n\x01")]);
        assert!(out.contains(r#""data":"a\"b\\c\n\u0001""#), "{out}");
        let out = json("/l", "/l", &[p("n", true, NodeKind::Writer, b"h/1")]);
        assert_eq!(
            out,
            "{\"path\":\"/l\",\"participants\":[{\"position\":1,\"state\":\"HOLDS\",\"holds\":true,\"kind\":\"WRITER\",\
             \"sequence\":7,\"session_id\":\"0x1234\",\"data\":\"h/1\",\"node\":\"n\",\"node_path\":\"/l/n\"}]}\n"
        );
        assert_eq!(json("/l", "/l", &[]), "{\"path\":\"/l\",\"participants\":[]}\n");
    }

    #[test]
    fn table_aligns_and_escapes() {
        let out = table("/l", &[p("a", true, NodeKind::Reader, b"x y"), p("b", false, NodeKind::Writer, b"")]);
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines.len(), 3);
        assert!(lines[0].starts_with("POS  STATE  KIND"));
        assert!(lines[1].contains("HOLDS") && lines[1].contains("READER") && lines[1].ends_with("x y"));
        assert!(lines[2].contains("WAITS") && lines[2].ends_with(" -"));
        assert_eq!(table("/l", &[]).lines().count(), 1);
    }
}
