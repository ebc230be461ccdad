//! A SHA-256 digest as markbench keeps it: 64 lowercase hex digits, checked
//! when it is made or read, so its short form is never cut from a string
//! that may be shorter (a record damaged or written by hand).

use serde::{Deserialize, Serialize};
use std::fmt;

/// A SHA-256 digest in hex.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Sha256(String);

/// A string that is no SHA-256 in hex.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0:?} is no SHA-256 (64 hex digits)")]
pub struct NotASha256(pub String);

impl Sha256 {
    /// The hex digits of the short form: enough to tell entries apart by eye.
    pub const SHORT: usize = 16;

    /// `hex` as a digest, when it is 64 hex digits (either case; kept in
    /// lowercase).
    pub fn parse(hex: impl Into<String>) -> Result<Sha256, NotASha256> {
        let hex = hex.into();
        if hex.len() == 64 && hex.bytes().all(|b| b.is_ascii_hexdigit()) {
            Ok(Sha256(hex.to_ascii_lowercase()))
        } else {
            Err(NotASha256(hex))
        }
    }

    /// The digest a hasher gave (32 bytes).
    pub fn from_digest(digest: &[u8]) -> Sha256 {
        debug_assert_eq!(digest.len(), 32, "a SHA-256 digest is 32 bytes");
        Sha256(hex::encode(digest))
    }

    /// The SHA-256 of `bytes`.
    pub fn of(bytes: &[u8]) -> Sha256 {
        use sha2::Digest;
        Sha256::from_digest(&sha2::Sha256::digest(bytes))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The first [`Sha256::SHORT`] hex digits, as listings and messages
    /// show a digest.
    pub fn short(&self) -> &str {
        &self.0[..Self::SHORT]
    }
}

impl fmt::Display for Sha256 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl AsRef<str> for Sha256 {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl TryFrom<String> for Sha256 {
    type Error = NotASha256;

    fn try_from(hex: String) -> Result<Sha256, NotASha256> {
        Sha256::parse(hex)
    }
}

impl std::str::FromStr for Sha256 {
    type Err = NotASha256;

    fn from_str(hex: &str) -> Result<Sha256, NotASha256> {
        Sha256::parse(hex)
    }
}

impl From<Sha256> for String {
    fn from(digest: Sha256) -> String {
        digest.0
    }
}

impl PartialEq<str> for Sha256 {
    fn eq(&self, other: &str) -> bool {
        self.0 == other
    }
}

impl PartialEq<String> for Sha256 {
    fn eq(&self, other: &String) -> bool {
        self.0 == *other
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_digest_is_64_hex_digits_and_its_short_form_16() {
        let empty = Sha256::of(b"");
        assert_eq!(
            empty.as_str(),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
        assert_eq!(empty.short(), "e3b0c44298fc1c14");
        assert_eq!(Sha256::parse(empty.as_str().to_uppercase()), Ok(empty));
    }

    #[test]
    fn a_short_or_foreign_string_is_refused_not_cut() {
        for bad in [
            "",
            "abc",
            "e3b0c44298fc1c14",
            &"g".repeat(64),
            &"a".repeat(65),
        ] {
            let err = Sha256::parse(bad).unwrap_err();
            assert_eq!(err.0, bad);
            assert!(err.to_string().contains("64 hex digits"), "{err}");
        }
        let read: Result<Sha256, _> = toml::from_str::<toml::Value>("x = \"abc\"")
            .unwrap()
            .get("x")
            .unwrap()
            .clone()
            .try_into();
        assert!(read.is_err());
    }
}
