//! Line-oriented inputs (procfs files, captures of other tools): what went wrong where.

use std::fmt;

/// A line that could not be parsed, with its 1-based line number and the input it came from.
/// The line and the reason (which may quote a field) are kept as excerpts: a malformed
/// input may be one line of megabytes, and every error is printed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LineError {
    pub input: String,
    pub line_no: usize,
    pub reason: String,
    pub line: String,
}

/// How much of a malformed line (or of a reason quoting it) an error keeps.
pub const EXCERPT_BYTES: usize = 200;

impl LineError {
    pub fn new(input: &str, line_no: usize, reason: impl Into<String>, line: &str) -> Self {
        LineError { input: input.to_string(), line_no, reason: excerpt(&reason.into()), line: excerpt(line) }
    }
}

/// The text itself when short, else its first EXCERPT_BYTES (cut at a character) and how long it was.
pub fn excerpt(text: &str) -> String {
    if text.len() <= EXCERPT_BYTES {
        return text.to_string();
    }
    let mut end = EXCERPT_BYTES;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}... ({} bytes in all)", &text[..end], text.len())
}

impl fmt::Display for LineError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} line {}: {}: {:?}", self.input, self.line_no, self.reason, self.line)
    }
}

/// Parses a non-negative decimal like "0.143268" into an integer count of 10^-`scale`
/// units, exactly (no float rounding): `scaled("77.96", 6)` is 77_960_000.
pub fn scaled(text: &str, scale: u32) -> Result<u64, String> {
    let bad = || format!("not a non-negative decimal: {text:?}");
    let (whole, fraction) = text.split_once('.').unwrap_or((text, ""));
    if whole.is_empty() && fraction.is_empty() {
        return Err(bad());
    }
    let digits = |s: &str| s.chars().all(|c| c.is_ascii_digit());
    if !digits(whole) || !digits(fraction) || fraction.len() > scale as usize {
        return Err(bad());
    }
    let whole: u64 = if whole.is_empty() { 0 } else { whole.parse().map_err(|_| bad())? };
    let padded = format!("{fraction:0<width$}", width = scale as usize);
    let fraction: u64 = if padded.is_empty() { 0 } else { padded.parse().map_err(|_| bad())? };
    whole
        .checked_mul(10u64.pow(scale))
        .and_then(|w| w.checked_add(fraction))
        .ok_or_else(|| format!("too large: {text:?}"))
}

#[cfg(test)]
mod tests {
    use super::{scaled, LineError, EXCERPT_BYTES};

    #[test]
    fn a_huge_malformed_line_is_kept_as_an_excerpt() {
        let line = "é".repeat(5_000_000); // 10 MB, two bytes a character
        let error = LineError::new("capture.txt", 3, format!("not a number: {line:?}"), &line);
        let shown = error.to_string();
        assert!(shown.len() < 3 * EXCERPT_BYTES, "{} bytes", shown.len());
        assert!(shown.contains("(10000000 bytes in all)"), "{shown}");
        assert!(shown.starts_with("capture.txt line 3: not a number: "), "{shown}");
    }

    #[test]
    fn decimals_scale_exactly() {
        assert_eq!(scaled("77.96", 6), Ok(77_960_000));
        assert_eq!(scaled("0.000744872", 9), Ok(744_872));
        assert_eq!(scaled("28", 9), Ok(28_000_000_000));
        assert_eq!(scaled(".5", 3), Ok(500));
    }

    #[test]
    fn rejects_signs_garbage_and_excess_precision() {
        for bad in ["-1", "1e3", "", ".", "1.2.3", "0.1234567891", "abc"] {
            assert!(scaled(bad, 9).is_err(), "{bad}");
        }
    }
}
