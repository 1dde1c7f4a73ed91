//! The runtime's top-level modules depend on each other without cycles
//! (the graph is drawn in the crate docs, `src/lib.rs`). A new `crate::`
//! path that closes a cycle fails here, naming the cycle.
//!
//! A module's dependencies are the top-level modules its non-test code
//! names through `crate::` paths (`crate::limiter::Inner`,
//! `use crate::{a, b}`), with the root's re-exports (`crate::Limiter`)
//! resolved to the module that defines them.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

type Graph = BTreeMap<String, BTreeSet<String>>;

/// The source without comments (doc links name paths too) and without
/// its `#[cfg(test)]` module (tests may reach anywhere).
fn code(source: &str) -> String {
    let source = match source.find("#[cfg(test)]\nmod tests") {
        Some(at) => &source[..at],
        None => source,
    };
    source
        .lines()
        .map(|line| line.split("//").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The first identifiers of the paths after each `crate::`.
fn crate_paths(code: &str) -> Vec<String> {
    let mut names = Vec::new();
    for (at, _) in code.match_indices("crate::") {
        // Not `$crate::` (macros) nor the tail of another identifier.
        if code[..at].ends_with(|c: char| c.is_alphanumeric() || c == '_' || c == '$') {
            continue;
        }
        let rest = &code[at + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let group = &group[..group.find('}').unwrap_or(group.len())];
            for item in group.split(',') {
                names.push(ident(item.trim()));
            }
        } else {
            names.push(ident(rest));
        }
    }
    names.retain(|n| !n.is_empty());
    names
}

fn ident(s: &str) -> String {
    s.chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect()
}

/// `pub use module::{A, B};` lines of lib.rs: which module defines `A`.
fn reexports(lib: &str) -> BTreeMap<String, String> {
    let mut map = BTreeMap::new();
    for item in lib.split(';') {
        let Some(at) = item.find("pub use ") else {
            continue;
        };
        let path = item[at + "pub use ".len()..].trim();
        let Some((module, names)) = path.split_once("::") else {
            continue;
        };
        for name in names.trim_matches(|c| c == '{' || c == '}').split(',') {
            let name = name.rsplit(" as ").next().unwrap_or("").trim();
            if !name.is_empty() {
                map.insert(name.to_string(), module.trim().to_string());
            }
        }
    }
    map
}

fn graph(src: &Path) -> Graph {
    let lib = std::fs::read_to_string(src.join("lib.rs")).unwrap();
    let reexported = reexports(&lib);
    let mut modules = BTreeSet::new();
    let mut files = Vec::new();
    for entry in std::fs::read_dir(src).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_stem().unwrap().to_string_lossy().into_owned();
        if path.is_dir() {
            for file in walk(&path) {
                files.push((name.clone(), file));
            }
            modules.insert(name);
        } else if name != "lib" {
            files.push((name.clone(), path));
            modules.insert(name);
        }
    }
    let mut graph = Graph::new();
    for (module, file) in files {
        let stem = file.file_stem().unwrap().to_string_lossy();
        // Test-only files: compiled under `cfg(test)` or `cfg(loom)`.
        if stem == "tests" || stem.ends_with("_tests") {
            continue;
        }
        let source = std::fs::read_to_string(&file).unwrap();
        let edges = graph.entry(module.clone()).or_default();
        for name in crate_paths(&code(&source)) {
            let target = if modules.contains(&name) {
                name
            } else if let Some(module) = reexported.get(&name) {
                module.clone()
            } else {
                panic!(
                    "{}: `crate::{name}` is neither a module nor a re-export",
                    file.display()
                );
            };
            if target != module {
                edges.insert(target);
            }
        }
    }
    graph
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files.extend(walk(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            files.push(path);
        }
    }
    files
}

/// A cycle through `from`, as a path of modules, if there is one.
fn cycle_through(graph: &Graph, from: &str) -> Option<Vec<String>> {
    let mut stack = vec![vec![from.to_string()]];
    let mut seen = BTreeSet::new();
    while let Some(path) = stack.pop() {
        let last = path.last().unwrap();
        for next in graph.get(last).into_iter().flatten() {
            if next == from {
                let mut cycle = path.clone();
                cycle.push(from.to_string());
                return Some(cycle);
            }
            if seen.insert(next.clone()) {
                let mut longer = path.clone();
                longer.push(next.clone());
                stack.push(longer);
            }
        }
    }
    None
}

#[test]
fn the_runtime_modules_have_no_dependency_cycle() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let graph = graph(&src);
    assert!(
        graph["limiter"].contains("class") && graph["metrics"].contains("limiter"),
        "the parser finds dependencies: {graph:#?}"
    );
    let cycles: Vec<String> = graph
        .keys()
        .filter_map(|module| cycle_through(&graph, module))
        .map(|cycle| cycle.join(" -> "))
        .collect();
    assert!(
        cycles.is_empty(),
        "module cycles (break them; see the layout in src/lib.rs):\n{}",
        cycles.join("\n")
    );
}

#[test]
fn the_cycle_check_finds_a_cycle() {
    let mut graph = Graph::new();
    graph.insert("a".into(), ["b".to_string()].into());
    graph.insert("b".into(), ["c".to_string()].into());
    graph.insert("c".into(), ["a".to_string()].into());
    graph.insert("d".into(), ["a".to_string()].into());
    assert_eq!(cycle_through(&graph, "a").unwrap(), ["a", "b", "c", "a"]);
    assert_eq!(cycle_through(&graph, "d"), None);
    assert_eq!(
        crate_paths("use crate::{a::X, b};\nlet x = crate::c::f(); $crate::d"),
        ["a", "b", "c"]
    );
}
