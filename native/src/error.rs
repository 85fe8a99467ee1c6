//! Errors as values: every failure caused by the bytes of a pack carries the offset of the
//! entry it concerns, so the user is told what is wrong and where.

use std::fmt;

/// What went wrong, so that a caller decides what to do without reading the message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// The bytes read are not what they should be (or an object is missing or misplaced).
    Corrupt,
    /// The system refused a read, write or another file operation.
    Io,
    /// The job saw its cancel flag and stopped.
    Interrupted,
    /// The repository lacks an object it names (PackError::object says which).
    Missing,
    /// A written entry proved to hold another object than the plan put there.
    NotPlanned,
}

impl ErrorKind {
    /// The name Python reads in PackFormatError.kind.
    pub fn name(self) -> &'static str {
        match self {
            ErrorKind::Corrupt => "corrupt",
            ErrorKind::Io => "io",
            ErrorKind::Interrupted => "interrupted",
            ErrorKind::Missing => "missing",
            ErrorKind::NotPlanned => "not-planned",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PackError {
    pub message: String,
    /// Offset of the pack entry (or header/trailer) the error concerns, when there is one.
    pub offset: Option<u64>,
    pub kind: ErrorKind,
    /// The raw id of the object a Missing error is about.
    pub object: Option<Vec<u8>>,
}

impl PackError {
    pub fn at(offset: u64, message: impl Into<String>) -> Self {
        PackError {
            message: message.into(),
            offset: Some(offset),
            kind: ErrorKind::Corrupt,
            object: None,
        }
    }

    pub fn general(message: impl Into<String>) -> Self {
        PackError {
            message: message.into(),
            offset: None,
            kind: ErrorKind::Corrupt,
            object: None,
        }
    }

    pub fn io(context: &str, err: std::io::Error) -> Self {
        PackError {
            kind: ErrorKind::Io,
            ..PackError::general(format!("{context}: {err}"))
        }
    }

    /// The object `id` (raw) is not in the repository; `message` says which it is.
    pub fn missing(id: &[u8], message: impl Into<String>) -> Self {
        PackError {
            kind: ErrorKind::Missing,
            object: Some(id.to_vec()),
            ..PackError::general(message)
        }
    }

    /// The entry at `offset` holds another object than the one planned for it.
    pub fn not_planned(offset: u64, message: impl Into<String>) -> Self {
        PackError {
            kind: ErrorKind::NotPlanned,
            ..PackError::at(offset, message)
        }
    }

    pub fn interrupted() -> Self {
        PackError {
            kind: ErrorKind::Interrupted,
            ..PackError::general("interrupted")
        }
    }
}

impl fmt::Display for PackError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.offset {
            Some(off) => write!(f, "{} (at offset {})", self.message, off),
            None => write!(f, "{}", self.message),
        }
    }
}

impl std::error::Error for PackError {}

pub type Result<T> = std::result::Result<T, PackError>;
