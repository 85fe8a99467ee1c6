//! The lines one object's check produces, as Git's fsck prints them.

use crate::fsck::rules::{Msg, Rules, Severity};
use crate::pack::hash::hex;
use crate::pack::object_id::{HashAlgo, ObjectId};

/// How a line is printed: `warning: object <id>: <text>`, `error: object <id>: <text>`, or
/// `error: <text>` (what Git's parsers print as they fail).
pub const WARNING: u8 = 0;
pub const ERROR: u8 = 1;
pub const PLAIN_ERROR: u8 = 2;

pub struct Report<'a> {
    rules: &'a Rules,
    /// The hash of the object checked, and so of the ids it names.
    pub algo: HashAlgo,
    skipped: bool,
    /// (WARNING, ERROR or PLAIN_ERROR, text) in the order printed.
    pub lines: Vec<(u8, String)>,
}

impl<'a> Report<'a> {
    pub fn new(rules: &'a Rules, id: &ObjectId) -> Self {
        Report {
            rules,
            algo: id.algo(),
            skipped: rules.skipped(id),
            lines: Vec::new(),
        }
    }

    /// Report `msg`; true when it is an error in this run (the caller then stops where Git
    /// stops). Nothing is reported on an object of the skip list.
    pub fn report(&mut self, msg: Msg, text: &str) -> bool {
        if self.skipped {
            return false;
        }
        match self.rules.severity(msg) {
            Severity::Ignore => false,
            s => {
                let error = s == Severity::Error;
                let level = if error { ERROR } else { WARNING };
                self.lines
                    .push((level, format!("{}: {}", msg.name(), text)));
                error
            }
        }
    }

    /// A line a parser of Git prints whatever the rules (not a report).
    pub fn plain_error(&mut self, text: &str) {
        self.lines.push((PLAIN_ERROR, text.to_string()));
    }
}

/// `get_oid_hex`: an id of `algo` in hex digits of either case at the start of `text`.
pub fn oid_hex(algo: HashAlgo, text: &[u8]) -> Option<ObjectId> {
    crate::pack::hash::parse_hex_any_case(algo, text.get(..algo.hexsz())?)
}

/// The id as Git prints it.
pub fn name(id: &ObjectId) -> String {
    hex(id)
}
