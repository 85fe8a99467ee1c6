//! Git's fsck message ids, in Git's order, with their default severities, and the severities
//! one run applies. The ids are Git's (`fsck.<msg-id>`, `--strict=<msg-id>=<severity>`); the
//! option strings are parsed on the Python side, which hands over one severity per id.

use crate::pack::entry_header::ObjectId;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Default {
    Fatal,
    Error,
    Warn,
    Info,
    Ignore,
}

/// What a report does in this run: nothing, a warning line, or an error line that fails the run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Severity {
    Ignore = 0,
    Warn = 1,
    Error = 2,
}

macro_rules! messages {
    ($(($id:ident, $name:literal, $default:ident),)*) => {
        // Ids for refs and reftables are accepted in option strings, as Git accepts them, but
        // only Git's ref checks report them.
        #[allow(dead_code)]
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub enum Msg {
            $($id,)*
        }

        /// Every message: its camel-case id (as Git prints and parses it) and default severity.
        pub const MESSAGES: &[(&str, Default)] = &[$(($name, Default::$default),)*];
    };
}

messages! {
    (NulInHeader, "nulInHeader", Fatal),
    (UnterminatedHeader, "unterminatedHeader", Fatal),
    (BadHeaderContinuation, "badHeaderContinuation", Error),
    (BadDate, "badDate", Error),
    (BadDateOverflow, "badDateOverflow", Error),
    (BadEmail, "badEmail", Error),
    (BadGpgsig, "badGpgsig", Error),
    (BadHeadTarget, "badHeadTarget", Error),
    (BadName, "badName", Error),
    (BadObjectSha1, "badObjectSha1", Error),
    (BadPackedRefEntry, "badPackedRefEntry", Error),
    (BadPackedRefHeader, "badPackedRefHeader", Error),
    (BadParentSha1, "badParentSha1", Error),
    (BadReferentName, "badReferentName", Error),
    (BadRefContent, "badRefContent", Error),
    (BadRefFiletype, "badRefFiletype", Error),
    (BadRefName, "badRefName", Error),
    (BadRefOid, "badRefOid", Error),
    (BadTimezone, "badTimezone", Error),
    (BadTree, "badTree", Error),
    (BadTreeSha1, "badTreeSha1", Error),
    (BadType, "badType", Error),
    (DuplicateEntries, "duplicateEntries", Error),
    (GitattributesBlob, "gitattributesBlob", Error),
    (GitattributesLarge, "gitattributesLarge", Error),
    (GitattributesLineLength, "gitattributesLineLength", Error),
    (GitattributesMissing, "gitattributesMissing", Error),
    (GitmodulesBlob, "gitmodulesBlob", Error),
    (GitmodulesLarge, "gitmodulesLarge", Error),
    (GitmodulesMissing, "gitmodulesMissing", Error),
    (GitmodulesName, "gitmodulesName", Error),
    (GitmodulesPath, "gitmodulesPath", Error),
    (GitmodulesSymlink, "gitmodulesSymlink", Error),
    (GitmodulesUpdate, "gitmodulesUpdate", Error),
    (GitmodulesUrl, "gitmodulesUrl", Error),
    (MissingAuthor, "missingAuthor", Error),
    (MissingCommitter, "missingCommitter", Error),
    (MissingEmail, "missingEmail", Error),
    (MissingNameBeforeEmail, "missingNameBeforeEmail", Error),
    (MissingObject, "missingObject", Error),
    (MissingSpaceBeforeDate, "missingSpaceBeforeDate", Error),
    (MissingSpaceBeforeEmail, "missingSpaceBeforeEmail", Error),
    (MissingTag, "missingTag", Error),
    (MissingTagEntry, "missingTagEntry", Error),
    (MissingTree, "missingTree", Error),
    (MissingType, "missingType", Error),
    (MissingTypeEntry, "missingTypeEntry", Error),
    (MultipleAuthors, "multipleAuthors", Error),
    (PackedRefEntryNotTerminated, "packedRefEntryNotTerminated", Error),
    (PackedRefUnsorted, "packedRefUnsorted", Error),
    (TreeNotSorted, "treeNotSorted", Error),
    (UnknownType, "unknownType", Error),
    (ZeroPaddedDate, "zeroPaddedDate", Error),
    (BadReftableTableName, "badReftableTableName", Warn),
    (EmptyName, "emptyName", Warn),
    (FullPathname, "fullPathname", Warn),
    (HasDot, "hasDot", Warn),
    (HasDotdot, "hasDotdot", Warn),
    (HasDotgit, "hasDotgit", Warn),
    (LargePathname, "largePathname", Warn),
    (NullSha1, "nullSha1", Warn),
    (NulInCommit, "nulInCommit", Warn),
    (ZeroPaddedFilemode, "zeroPaddedFilemode", Warn),
    (BadFilemode, "badFilemode", Info),
    (BadTagName, "badTagName", Info),
    (EmptyPackedRefsFile, "emptyPackedRefsFile", Info),
    (GitattributesSymlink, "gitattributesSymlink", Info),
    (GitignoreSymlink, "gitignoreSymlink", Info),
    (GitmodulesParse, "gitmodulesParse", Info),
    (MailmapSymlink, "mailmapSymlink", Info),
    (MissingTaggerEntry, "missingTaggerEntry", Info),
    (RefMissingNewline, "refMissingNewline", Info),
    (SymlinkRef, "symlinkRef", Info),
    (SymrefTargetIsNotARef, "symrefTargetIsNotARef", Info),
    (TrailingRefContent, "trailingRefContent", Info),
    (ExtraHeaderEntry, "extraHeaderEntry", Ignore),
}

impl Msg {
    pub fn name(self) -> &'static str {
        MESSAGES[self as usize].0
    }
}

/// The rules of one run.
#[derive(Default)]
pub struct Rules {
    /// One severity per message, in the order of MESSAGES.
    pub severities: Vec<Severity>,
    /// Objects never reported on (fsck.skipList), sorted.
    pub skip: Vec<ObjectId>,
    /// Tree entries longer than this are reported (largePathname); Git's default is 4096.
    pub max_tree_entry_len: usize,
}

impl Rules {
    pub fn severity(&self, msg: Msg) -> Severity {
        self.severities
            .get(msg as usize)
            .copied()
            .unwrap_or(Severity::Error)
    }

    pub fn skipped(&self, id: &ObjectId) -> bool {
        self.skip.binary_search(id).is_ok()
    }
}
