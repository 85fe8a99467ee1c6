//! The Python face of Git's object checks: the message table Python parses options with, and
//! the conversions of rules and findings.

use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::fsck::rules::{Default, Rules, Severity, MESSAGES};
use crate::fsck::{Checker, Finding, Special};
use crate::index::checks::{self, RunsChecks};
use crate::pack::object_id::{concat, ids_of, HashAlgo};

/// Git's fsck message ids in order, each with its default severity ("fatal", "error",
/// "warn", "info" or "ignore").
#[pyfunction]
pub fn fsck_messages() -> Vec<(&'static str, &'static str)> {
    MESSAGES
        .iter()
        .map(|&(name, d)| {
            let default = match d {
                Default::Fatal => "fatal",
                Default::Error => "error",
                Default::Warn => "warn",
                Default::Info => "info",
                Default::Ignore => "ignore",
            };
            (name, default)
        })
        .collect()
}

/// The checks as Python's `indexer.fsck.checks` gives them (its `Checks`, read by its
/// attributes): whether to check each object, to gather links (the connectivity check), Git's
/// strict rule that no object appears twice; one severity byte per fsck message (0 ignore,
/// 1 warn, 2 error), the ids never reported on, and the longest tree entry name allowed.
#[derive(FromPyObject)]
pub(crate) struct CheckOptions {
    objects: bool,
    links: bool,
    strict: bool,
    severities: Vec<u8>,
    skip: Vec<u8>,
    max_tree_entry_len: usize,
}

impl CheckOptions {
    /// Have `on` run these checks on every object it hashes.
    pub(crate) fn install(&self, on: &mut impl RunsChecks) -> PyResult<()> {
        let algo = on.algo();
        let rules = fsck_rules(algo, &self.severities, &self.skip, self.max_tree_entry_len)?;
        on.set_checks(Checker::new(
            algo,
            self.objects,
            self.links,
            self.strict,
            rules,
        ));
        Ok(())
    }
}

fn fsck_rules(
    algo: HashAlgo,
    severities: &[u8],
    skip: &[u8],
    max_tree_entry_len: usize,
) -> PyResult<Rules> {
    let severities = severities
        .iter()
        .map(|&s| match s {
            0 => Ok(Severity::Ignore),
            1 => Ok(Severity::Warn),
            2 => Ok(Severity::Error),
            _ => Err(pyo3::exceptions::PyValueError::new_err("bad severity")),
        })
        .collect::<PyResult<Vec<_>>>()?;
    let skip = ids_of(algo, skip).filter(|_| severities.len() == MESSAGES.len());
    let Some(mut skip) = skip else {
        return Err(pyo3::exceptions::PyValueError::new_err(
            "one severity per fsck message and whole ids to skip are needed",
        ));
    };
    skip.sort_unstable();
    Ok(Rules {
        severities,
        skip,
        max_tree_entry_len,
    })
}

/// The names Python knows the special blobs by, both ways.
const SPECIAL_NAMES: [(Special, &str); 2] = [
    (Special::Gitmodules, "gitmodules"),
    (Special::Gitattributes, "gitattributes"),
];

fn special_name(s: Special) -> &'static str {
    SPECIAL_NAMES
        .iter()
        .find(|&&(k, _)| k == s)
        .map_or("", |&(_, n)| n)
}

/// What the checks said of one object.
#[pyclass(name = "Finding", get_all, frozen, module = "packorder._native")]
pub struct PyFinding {
    id: Py<PyBytes>,
    /// (level, text) as Git prints them; levels as in fsck::report.
    lines: Vec<(u8, String)>,
    /// The line Git dies with, if this finding fails the pack.
    fatal: Option<String>,
}

pub(crate) fn findings_to_py(
    py: Python<'_>,
    findings: Vec<Finding>,
) -> PyResult<Bound<'_, pyo3::types::PyList>> {
    let rows: Vec<PyFinding> = findings
        .into_iter()
        .map(|f| PyFinding {
            id: PyBytes::new(py, &f.id).unbind(),
            lines: f.lines,
            fatal: f.fatal,
        })
        .collect();
    pyo3::types::PyList::new(py, rows)
}

/// What the object checks found once they end.
#[pyclass(get_all, frozen, module = "packorder._native")]
pub struct CheckOutcome {
    /// One Finding per object a check spoke of.
    findings: Py<pyo3::types::PyList>,
    /// Ids of linked objects the pack lacks, one after another.
    foreign_ids: Py<PyBytes>,
    /// The type each of those links expects, one byte each.
    foreign_kinds: Py<PyBytes>,
    /// Special blobs the pack lacks, as (id, "gitmodules" or "gitattributes").
    outside: Py<pyo3::types::PyList>,
}

/// The end of the object checks as Python reads it.
pub(crate) fn outcome_to_py(py: Python<'_>, out: checks::Outcome) -> PyResult<CheckOutcome> {
    let ids: Vec<u8> = concat(out.foreign.iter().map(|(id, _)| id));
    let kinds: Vec<u8> = out.foreign.iter().map(|&(_, k)| k).collect();
    let outside: Vec<(Bound<'_, PyBytes>, &str)> = out
        .outside
        .iter()
        .map(|(id, s)| (PyBytes::new(py, id), special_name(*s)))
        .collect();
    Ok(CheckOutcome {
        findings: findings_to_py(py, out.findings)?.unbind(),
        foreign_ids: PyBytes::new(py, &ids).unbind(),
        foreign_kinds: PyBytes::new(py, &kinds).unbind(),
        outside: pyo3::types::PyList::new(py, outside)?.unbind(),
    })
}

/// The special blob Python names ("gitmodules" or "gitattributes").
pub(crate) fn special_named(special: &str) -> PyResult<Special> {
    SPECIAL_NAMES
        .iter()
        .find(|&&(_, n)| n == special)
        .map(|&(k, _)| k)
        .ok_or_else(|| {
            pyo3::exceptions::PyValueError::new_err(format!("no special blob {special:?}"))
        })
}
