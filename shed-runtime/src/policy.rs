//! The policy of each guarded fn (a `static` the macro generates), its
//! running statistics, and the process-wide policy table.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::Duration;

use serde::ser::SerializeStruct;

use crate::estimate::ServiceEstimate;

/// The admission policy of one guarded fn: what its `#[shed(...)]`
/// attribute says, where it is, and what has been learned about it.
///
/// The macro creates one `static` per fn, so a call reaches its policy and
/// statistics without any lookup.
pub struct Policy {
    name: Name,
    class: &'static str,
    max_wait: Option<Duration>,
    weight: u32,
    file: &'static str,
    line: u32,
    pub(crate) stats: PolicyStats,
}

/// Where a policy's name comes from.
enum Name {
    /// Written in the attribute (`name = "..."`), or given at run time.
    Given(&'static str),
    /// The default: the fn's own path, impl type included, read from the
    /// type name of a marker type the macro declares in the fn's body
    /// (`crate::orders::Orders::get::{{closure}}::__ShedHere`). A
    /// `static` cannot name `Self` nor call `type_name` in a const
    /// context, so the path is resolved on first use and kept.
    Here {
        marker: fn() -> &'static str,
        resolved: OnceLock<&'static str>,
    },
}

impl Name {
    fn get(&self) -> &'static str {
        match self {
            Name::Given(name) => name,
            Name::Here { marker, resolved } => resolved.get_or_init(|| fn_path(marker())),
        }
    }
}

/// The path of the fn that declares the marker: the marker's type name
/// without its own segment and the `{{closure}}` segments of `async` bodies.
fn fn_path(marker: &'static str) -> &'static str {
    let mut path = marker
        .rsplit_once("::")
        .map_or(marker, |(fn_path, _)| fn_path);
    while let Some(outer) = path.strip_suffix("::{{closure}}") {
        path = outer;
    }
    path
}

impl Policy {
    /// Not public API: the macro builds policies.
    #[doc(hidden)]
    pub const fn new(
        name: &'static str,
        class: &'static str,
        max_wait: Option<Duration>,
        weight: u32,
        file: &'static str,
        line: u32,
    ) -> Self {
        Self::build(Name::Given(name), class, max_wait, weight, file, line)
    }

    /// Not public API: the macro builds policies. The name is the path of
    /// the fn that declares a marker type; `marker` returns the marker's
    /// type name (`core::any::type_name::<Marker>`).
    #[doc(hidden)]
    pub const fn named_here(
        marker: fn() -> &'static str,
        class: &'static str,
        max_wait: Option<Duration>,
        weight: u32,
        file: &'static str,
        line: u32,
    ) -> Self {
        let name = Name::Here {
            marker,
            resolved: OnceLock::new(),
        };
        Self::build(name, class, max_wait, weight, file, line)
    }

    const fn build(
        name: Name,
        class: &'static str,
        max_wait: Option<Duration>,
        weight: u32,
        file: &'static str,
        line: u32,
    ) -> Self {
        Self {
            name,
            class,
            max_wait,
            weight,
            file,
            line,
            stats: PolicyStats::new(),
        }
    }

    /// A policy built at run time, for work that is not a `#[shed]` fn: a
    /// route chosen by a tower layer, a stream of the overload lab. It is
    /// leaked (a policy lives as long as the program, like the `static`
    /// the attribute generates), so build one per route or stream, not per
    /// call. It is not added to [`policies()`].
    ///
    /// ```
    /// let policy = shed_runtime::Policy::leak("GET /search", "optional", None, 2);
    /// assert_eq!((policy.name(), policy.weight()), ("GET /search", 2));
    /// ```
    pub fn leak(
        name: impl Into<String>,
        class: impl Into<String>,
        max_wait: Option<Duration>,
        weight: u32,
    ) -> &'static Policy {
        let name: &'static str = Box::leak(name.into().into_boxed_str());
        let class: &'static str = Box::leak(class.into().into_boxed_str());
        Box::leak(Box::new(Policy::new(
            name,
            class,
            max_wait,
            weight.max(1),
            "<runtime>",
            0,
        )))
    }

    /// The fn's name: what the attribute's `name` says, or by default the
    /// fn's path, with the impl type for methods (`orders::Orders::get`,
    /// `<orders::Db as orders::Repo>::find`). The default is for reading;
    /// it follows Rust's `type_name`, whose exact form is not guaranteed
    /// across compiler versions, so give a `name` when a dashboard or an
    /// alert depends on it.
    pub fn name(&self) -> &'static str {
        self.name.get()
    }

    /// The class the fn's calls belong to.
    pub fn class(&self) -> &'static str {
        self.class
    }

    /// The queue-wait budget written in the attribute; `None` means the
    /// class's default applies.
    pub fn max_wait(&self) -> Option<Duration> {
        self.max_wait
    }

    /// How many slots one call takes.
    pub fn weight(&self) -> u32 {
        self.weight
    }

    /// The source file of the fn.
    pub fn file(&self) -> &'static str {
        self.file
    }

    /// The line of the fn's name.
    pub fn line(&self) -> u32 {
        self.line
    }

    /// The service time the process-wide limiter learned from the fn's
    /// completed calls, if any.
    pub fn expected_service(&self) -> Option<Duration> {
        self.stats.global_service.get()
    }
}

impl fmt::Debug for Policy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Policy")
            .field("name", &self.name())
            .field("class", &self.class)
            .field("max_wait", &self.max_wait)
            .field("weight", &self.weight)
            .field("file", &self.file)
            .field("line", &self.line)
            .finish()
    }
}

impl serde::Serialize for Policy {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut s = serializer.serialize_struct("Policy", 6)?;
        s.serialize_field("name", self.name())?;
        s.serialize_field("class", self.class)?;
        s.serialize_field(
            "max_wait",
            &self
                .max_wait
                .map(|d| humantime::format_duration(d).to_string()),
        )?;
        s.serialize_field("weight", &self.weight)?;
        s.serialize_field("file", self.file)?;
        s.serialize_field("line", &self.line)?;
        s.end()
    }
}

/// What a fn has taught the limiters, updated without locks.
pub(crate) struct PolicyStats {
    /// The service time the process-wide limiter learned; other limiters
    /// keep theirs in the slot below or a table of their own (see
    /// `limiter::learned`), so that limiters stay independent.
    pub(crate) global_service: ServiceEstimate,
    /// The id of the one other limiter that owns `scoped_service` (0: none).
    pub(crate) scoped_owner: std::sync::atomic::AtomicU32,
    /// The service time that limiter learned, read without a lock.
    pub(crate) scoped_service: ServiceEstimate,
    /// `(limiter id << 32) | class index`, cached so that a call does not
    /// look its class up by name; `u64::MAX` until resolved.
    binding: AtomicU64,
}

const UNBOUND: u64 = u64::MAX;

impl PolicyStats {
    pub(crate) const fn new() -> Self {
        Self {
            global_service: ServiceEstimate::new(),
            scoped_owner: std::sync::atomic::AtomicU32::new(0),
            scoped_service: ServiceEstimate::new(),
            binding: AtomicU64::new(UNBOUND),
        }
    }

    /// The class index this policy resolved to on limiter `limiter_id`.
    // Always: on the fast path that `guard::admit` inlines into every
    // `#[shed]` fn; left to itself the compiler calls it out of line.
    #[inline(always)]
    pub(crate) fn bound_class(&self, limiter_id: u32) -> Option<usize> {
        let binding = self.binding.load(Ordering::Relaxed);
        if binding != UNBOUND && (binding >> 32) as u32 == limiter_id {
            Some((binding & u64::from(u32::MAX)) as usize)
        } else {
            None
        }
    }

    pub(crate) fn bind_class(&self, limiter_id: u32, class: usize) {
        self.binding.store(
            (u64::from(limiter_id) << 32) | class as u64,
            Ordering::Relaxed,
        );
    }
}

/// Not public API: what `#[shed]` submits to the policy table.
#[doc(hidden)]
pub struct Registration(pub &'static Policy);

inventory::collect!(Registration);

/// Every `#[shed]` fn linked into this program, sorted by name, then file
/// and line.
///
/// Registration happens at program start through [`inventory`]: a fn from
/// a crate that is linked into the binary appears even if it is never
/// called. A crate the binary never links (a dependency nothing uses)
/// contributes nothing, so reference such a crate (`use other_crate as _;`)
/// if its handlers must appear.
pub fn policies() -> PolicyTable {
    PolicyTable::from_policies(inventory::iter::<Registration>.into_iter().map(|r| r.0))
}

/// The policy table: renders as an aligned text table (`Display`) for
/// startup logs and serialises as a JSON array for admin endpoints.
#[derive(Debug, Clone)]
pub struct PolicyTable {
    entries: Vec<&'static Policy>,
}

impl PolicyTable {
    /// A table of the given policies (tests, or checking a subset).
    pub fn from_policies(policies: impl IntoIterator<Item = &'static Policy>) -> Self {
        let mut entries: Vec<&'static Policy> = policies.into_iter().collect();
        entries.sort_by(|a, b| (a.name(), a.file, a.line).cmp(&(b.name(), b.file, b.line)));
        Self { entries }
    }

    /// A table without policies.
    pub fn empty() -> Self {
        Self::from_policies([])
    }

    /// The policies, in table order.
    pub fn iter(&self) -> impl Iterator<Item = &'static Policy> + '_ {
        self.entries.iter().copied()
    }

    /// The number of guarded fns.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether no fn is guarded.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The policy of the fn named `name`.
    pub fn get(&self, name: &str) -> Option<&'static Policy> {
        self.iter().find(|p| p.name() == name)
    }

    /// The table as a JSON array.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::to_value(self).expect("a policy always serialises")
    }
}

impl<'a> IntoIterator for &'a PolicyTable {
    type Item = &'static Policy;
    type IntoIter = std::iter::Copied<std::slice::Iter<'a, &'static Policy>>;

    fn into_iter(self) -> Self::IntoIter {
        self.entries.iter().copied()
    }
}

impl serde::Serialize for PolicyTable {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.entries.iter())
    }
}

impl fmt::Display for PolicyTable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let header = ["NAME", "CLASS", "MAX_WAIT", "WEIGHT", "LOCATION"];
        let rows: Vec<[String; 5]> = self
            .entries
            .iter()
            .map(|p| {
                [
                    p.name().to_string(),
                    p.class.to_string(),
                    p.max_wait.map_or_else(
                        || "(class)".to_string(),
                        |d| humantime::format_duration(d).to_string(),
                    ),
                    p.weight.to_string(),
                    format!("{}:{}", p.file, p.line),
                ]
            })
            .collect();
        let mut widths = header.map(str::len);
        for row in &rows {
            for (width, cell) in widths.iter_mut().zip(row) {
                *width = (*width).max(cell.chars().count());
            }
        }
        let mut write_row = |cells: [&str; 5]| -> fmt::Result {
            let mut line = String::new();
            for (i, (cell, width)) in cells.iter().zip(widths).enumerate() {
                if i + 1 == cells.len() {
                    line.push_str(cell);
                } else if i == 3 {
                    line.push_str(&format!("{cell:>width$}  "));
                } else {
                    line.push_str(&format!("{cell:<width$}  "));
                }
            }
            writeln!(f, "{}", line.trim_end())
        };
        write_row(header)?;
        for row in &rows {
            write_row([&row[0], &row[1], &row[2], &row[3], &row[4]])?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::fn_path;

    #[test]
    fn default_name_drops_the_marker_and_async_closures() {
        assert_eq!(
            fn_path("app::orders::Orders::get::{{closure}}::__ShedHere"),
            "app::orders::Orders::get"
        );
        assert_eq!(
            fn_path("<app::Db as app::Repo>::find::{{closure}}::__ShedHere"),
            "<app::Db as app::Repo>::find"
        );
        assert_eq!(fn_path("app::free::__ShedHere"), "app::free");
    }
}
