//! Errors as values: every failure caused by the bytes of a pack carries the offset of the
//! entry it concerns, so the user is told what is wrong and where.

use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PackError {
    pub message: String,
    /// Offset of the pack entry (or header/trailer) the error concerns, when there is one.
    pub offset: Option<u64>,
}

impl PackError {
    pub fn at(offset: u64, message: impl Into<String>) -> Self {
        PackError {
            message: message.into(),
            offset: Some(offset),
        }
    }

    pub fn general(message: impl Into<String>) -> Self {
        PackError {
            message: message.into(),
            offset: None,
        }
    }

    pub fn io(context: &str, err: std::io::Error) -> Self {
        PackError::general(format!("{context}: {err}"))
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
