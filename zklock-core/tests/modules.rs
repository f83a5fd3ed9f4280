//! The engine's modules form no cycle (issue 32): in `zklock-core` and in
//! `zklock-proto`, no module reaches itself through the `crate::<module>`
//! paths of its code (comments left out). Lower layers know nothing of the
//! ones above them: a change to the handles cannot change the protocol's
//! runners, nor a runner the session.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Each module of the crate whose sources are in `src` (one file each) with
/// the modules its code names.
fn graph(src: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let files: Vec<_> = std::fs::read_dir(src)
        .expect("the crate's src directory")
        .map(|e| e.expect("a directory entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "rs"))
        .collect();
    let module = |p: &Path| p.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    let modules: BTreeSet<String> = files.iter().map(|p| module(p)).collect();
    let mut graph = BTreeMap::new();
    for path in &files {
        let name = module(path);
        let code = without_comments(&std::fs::read_to_string(path).expect("a source file"));
        graph.insert(name.clone(), names_used(&code, &modules, &name));
    }
    graph
}

/// `text` with every line cut at its first `//` (comments and doc
/// comments; a `//` inside a string cuts the rest of that line too, which
/// only hides a path named later on it).
fn without_comments(text: &str) -> String {
    text.lines().map(|l| l.split("//").next().unwrap_or("")).collect::<Vec<_>>().join("\n")
}

/// The modules among `modules` (other than `own`) that `code` names as
/// `crate::<module>`, directly or in a `crate::{...}` group.
fn names_used(code: &str, modules: &BTreeSet<String>, own: &str) -> BTreeSet<String> {
    let mut used = BTreeSet::new();
    for (i, _) in code.match_indices("crate::") {
        let rest = &code[i + "crate::".len()..];
        let words: Vec<&str> = if let Some(group) = rest.strip_prefix('{') {
            group.split('}').next().unwrap_or("").split(',').map(|w| w.trim()).collect()
        } else {
            vec![rest]
        };
        for word in words {
            let module: String = word.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
            if module != own && modules.contains(&module) {
                used.insert(module);
            }
        }
    }
    used
}

/// A cycle of `graph`, if it has one (the modules in order, the first
/// repeated at the end).
fn cycle(graph: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        node: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(at) = path.iter().position(|n| n == node) {
            let mut found = path[at..].to_vec();
            found.push(node.to_owned());
            return Some(found);
        }
        if done.contains(node) {
            return None;
        }
        path.push(node.to_owned());
        for next in graph.get(node).into_iter().flatten() {
            if let Some(found) = visit(next, graph, path, done) {
                return Some(found);
            }
        }
        path.pop();
        done.insert(node.to_owned());
        None
    }
    let mut done = BTreeSet::new();
    graph.keys().find_map(|start| visit(start, graph, &mut Vec::new(), &mut done))
}

fn assert_acyclic(crate_dir: &Path) {
    let graph = graph(&crate_dir.join("src"));
    assert!(graph.len() > 5, "{}: found only {:?}", crate_dir.display(), graph.keys());
    if let Some(found) = cycle(&graph) {
        panic!("{}: the modules {} import each other in a circle", crate_dir.display(), found.join(" -> "));
    }
}

#[test]
fn the_cores_modules_form_no_cycle() {
    assert_acyclic(Path::new(env!("CARGO_MANIFEST_DIR")));
}

#[test]
fn the_protocols_modules_form_no_cycle() {
    assert_acyclic(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../zklock-proto"));
}

#[test]
fn the_check_sees_a_cycle_through_a_group_import() {
    let modules: BTreeSet<String> = ["a", "b", "c"].iter().map(|s| s.to_string()).collect();
    let mut g = BTreeMap::new();
    g.insert("a".to_owned(), names_used("use crate::{b::X, zz};", &modules, "a"));
    g.insert("b".to_owned(), names_used("fn f() { crate::c::g() }", &modules, "b"));
    g.insert("c".to_owned(), names_used("use crate::a;", &modules, "c"));
    assert_eq!(cycle(&g), Some(vec!["a".into(), "b".into(), "c".into(), "a".into()]));
    g.insert("c".to_owned(), names_used(&without_comments("/// [`crate::a`] in a comment"), &modules, "c"));
    assert_eq!(cycle(&g), None);
}
