//! `--signing-key`: how the agent shows which host it speaks for. Every Kafka message value
//! it sends carries a header holding an HMAC-SHA256 of the value made with the host's key;
//! the stream job, which holds the master secret the key was derived from, refuses a
//! record whose signature is missing or was made with another host's key.
//!
//! The header's name, the version and the derivation label come from schema/signing.json,
//! the one source of truth shared with the stream job. The key is a secret: no error ever
//! shows any part of the file.

use anyhow::{bail, Context, Result};
use hmac::{Hmac, Mac};
use serde::Deserialize;
use sha2::Sha256;
use std::fmt;
use std::fs::File;
use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::sync::LazyLock;

const SIGNING_JSON: &str = include_str!("../../schema/signing.json");

#[derive(Deserialize)]
struct Contract {
    header: String,
    version: String,
    host_key_label: String,
}

static CONTRACT: LazyLock<Contract> =
    LazyLock::new(|| serde_json::from_str(SIGNING_JSON).expect("schema/signing.json is valid"));

/// Bytes of a host key, and of every HMAC-SHA256.
const KEY_BYTES: usize = 32;

/// The name of the header that carries a message's signature.
pub fn header_name() -> &'static str {
    &CONTRACT.header
}

/// A host's key, derived from the master secret for that host: HMAC-SHA256(master, label
/// followed by the host name exactly as its records name it).
#[cfg_attr(not(test), allow(dead_code))]
pub fn host_key(master: &[u8], host: &str) -> HostKey {
    let label = CONTRACT.host_key_label.as_bytes();
    HostKey(hmac_sha256(master, &[label, host.as_bytes()]))
}

/// The key the agent signs with; its Debug shows no part of it.
#[derive(Clone)]
pub struct HostKey([u8; KEY_BYTES]);

impl fmt::Debug for HostKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("HostKey(..)")
    }
}

impl HostKey {
    /// Reads and checks the key file; says once on stderr when its group or others may
    /// read it.
    pub fn load(path: &Path) -> Result<Self> {
        let mut file = File::open(path).with_context(|| format!("opening --signing-key {}", path.display()))?;
        let mode = file.metadata().with_context(|| format!("reading {}", path.display()))?.permissions().mode();
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes).with_context(|| format!("reading {}", path.display()))?;
        let key = Self::from_file_bytes(path, &bytes)?;
        if readable_by_others(mode) {
            eprintln!("iopipe-agent: {} holds the host's signing key and is readable by others: chmod 600 {0}", path.display());
        }
        Ok(key)
    }

    /// The key of a file's bytes: 64 lowercase hex digits, then at most one newline. Errors
    /// say where and what is wrong, never what the file holds.
    fn from_file_bytes(path: &Path, bytes: &[u8]) -> Result<Self> {
        let at = || format!("--signing-key {}", path.display());
        let digits = bytes.strip_suffix(b"\n").unwrap_or(bytes);
        if digits.is_empty() {
            bail!("{} is empty: it must hold the host key as 64 lowercase hex digits", at());
        }
        if digits.len() != 2 * KEY_BYTES {
            bail!(
                "{} holds {} characters, not the 64 lowercase hex digits of a host key (a trailing newline is allowed, \
                 nothing else)",
                at(),
                digits.len()
            );
        }
        if let Some(position) = digits.iter().position(|&b| hex_value(b).is_none()) {
            bail!("{}: character {} is not a lowercase hex digit (0-9, a-f)", at(), position + 1);
        }
        let mut key = [0u8; KEY_BYTES];
        for (byte, pair) in key.iter_mut().zip(digits.chunks_exact(2)) {
            *byte = (hex_value(pair[0]).unwrap_or(0) << 4) | hex_value(pair[1]).unwrap_or(0);
        }
        Ok(HostKey(key))
    }

    /// The header value that signs a message `value` sent exactly as these bytes: the
    /// contract's version, '=', then the HMAC-SHA256 in lowercase hex.
    pub fn header_value(&self, value: &[u8]) -> String {
        format!("{}={}", CONTRACT.version, lower_hex(&hmac_sha256(&self.0, &[value])))
    }
}

fn hmac_sha256(key: &[u8], parts: &[&[u8]]) -> [u8; KEY_BYTES] {
    let mut mac = Hmac::<Sha256>::new_from_slice(key).expect("HMAC takes a key of any length");
    for part in parts {
        mac.update(part);
    }
    mac.finalize().into_bytes().into()
}

/// Whether a file of `mode` may be read by its group or by others.
fn readable_by_others(mode: u32) -> bool {
    mode & 0o044 != 0
}

fn hex_value(digit: u8) -> Option<u8> {
    match digit {
        b'0'..=b'9' => Some(digit - b'0'),
        b'a'..=b'f' => Some(digit - b'a' + 10),
        _ => None,
    }
}

fn lower_hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const PATH: &str = "/etc/iopipe/signing.key";

    /// The contract's test vector, which the stream job checks too.
    #[derive(Deserialize)]
    struct Example {
        master_secret_hex: String,
        host: String,
        value: String,
        host_key_hex: String,
        header_value: String,
    }

    fn examples() -> Vec<Example> {
        #[derive(Deserialize)]
        struct WithExamples {
            examples: Vec<Example>,
        }
        let parsed: WithExamples = serde_json::from_str(SIGNING_JSON).unwrap();
        assert!(!parsed.examples.is_empty(), "schema/signing.json has no example");
        parsed.examples
    }

    fn bytes_of_hex(hex: &str) -> Vec<u8> {
        (0..hex.len()).step_by(2).map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap()).collect()
    }

    fn refusal(bytes: &[u8]) -> String {
        format!("{:#}", HostKey::from_file_bytes(Path::new(PATH), bytes).expect_err("refused"))
    }

    #[test]
    fn the_contracts_example_host_key_is_derived_from_the_master_secret() {
        for example in examples() {
            let key = host_key(&bytes_of_hex(&example.master_secret_hex), &example.host);
            assert_eq!(lower_hex(&key.0), example.host_key_hex, "host {}", example.host);
        }
    }

    #[test]
    fn the_contracts_example_value_gets_its_header_value() {
        for example in examples() {
            let file = format!("{}\n", example.host_key_hex);
            let key = HostKey::from_file_bytes(Path::new(PATH), file.as_bytes()).unwrap();
            assert_eq!(key.header_value(example.value.as_bytes()), example.header_value);
            let derived = host_key(&bytes_of_hex(&example.master_secret_hex), &example.host);
            assert_eq!(derived.header_value(example.value.as_bytes()), example.header_value);
        }
    }

    #[test]
    fn the_header_is_named_by_the_contract() {
        assert_eq!(header_name(), "iopipe-sig");
        assert!(HostKey([0; KEY_BYTES]).header_value(b"{}").starts_with("v1="));
    }

    #[test]
    fn a_key_file_with_or_without_its_newline_is_read() {
        let hex = "0f".repeat(KEY_BYTES);
        for text in [hex.clone(), format!("{hex}\n")] {
            let key = HostKey::from_file_bytes(Path::new(PATH), text.as_bytes()).unwrap();
            assert_eq!(key.0, [0x0f; KEY_BYTES]);
        }
    }

    #[test]
    fn a_malformed_key_file_is_refused_naming_the_file() {
        let hex = "ab".repeat(KEY_BYTES);
        let cases: [(Vec<u8>, &str); 9] = [
            (b"".to_vec(), "is empty"),
            (b"\n".to_vec(), "is empty"),
            (hex[..62].as_bytes().to_vec(), "holds 62 characters"),
            (format!("{hex}00").into_bytes(), "holds 66 characters"),
            (format!("{hex}\n\n").into_bytes(), "holds 65 characters"),
            (format!("{hex}\r\n").into_bytes(), "holds 65 characters"),
            (format!(" {}", &hex[1..]).into_bytes(), "character 1 is not a lowercase hex digit"),
            (format!("{}g", &hex[..63]).into_bytes(), "character 64 is not a lowercase hex digit"),
            (hex.to_uppercase().into_bytes(), "character 1 is not a lowercase hex digit"),
        ];
        for (bytes, why) in cases {
            let shown = refusal(&bytes);
            assert!(shown.starts_with(&format!("--signing-key {PATH}")), "{shown}");
            assert!(shown.contains(why), "{shown}");
        }
    }

    #[test]
    fn no_part_of_the_key_appears_in_an_error() {
        let secret = "5ec2e7d1";
        let hex = secret.repeat(8);
        let cases = [
            format!("{hex}{secret}"),
            format!("{secret}{secret}"),
            format!("{}X", &hex[..63]),
            format!("{}\n", hex.to_uppercase()),
            format!("{hex} \n"),
        ];
        for text in cases {
            let shown = refusal(text.as_bytes());
            assert!(!shown.to_lowercase().contains(secret), "{shown}");
        }
        let key = HostKey::from_file_bytes(Path::new(PATH), hex.as_bytes()).unwrap();
        assert!(!format!("{key:?}").contains(secret));
    }

    #[test]
    fn a_key_file_others_can_read_wants_chmod() {
        assert!(!readable_by_others(0o100600));
        assert!(!readable_by_others(0o100400));
        assert!(readable_by_others(0o100640));
        assert!(readable_by_others(0o100604));
    }

    #[test]
    fn a_missing_key_file_is_named() {
        let missing = Path::new("/nonexistent/iopipe/signing.key");
        let shown = format!("{:#}", HostKey::load(missing).expect_err("refused"));
        assert!(shown.starts_with("opening --signing-key /nonexistent/iopipe/signing.key"), "{shown}");
    }
}
