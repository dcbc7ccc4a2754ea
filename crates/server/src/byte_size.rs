//! Byte counts as people write them, one spelling for every service: a limit
//! mcp-service states and the sentence runs-service words from it must read
//! the same.

/// A byte count as people write it: `4 MiB`, `512 KiB`, `1000 bytes`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ByteSize(pub usize);

impl std::fmt::Display for ByteSize {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        const KIB: usize = 1024;
        const MIB: usize = 1024 * KIB;
        match self.0 {
            n if n >= MIB && n % MIB == 0 => write!(f, "{} MiB", n / MIB),
            n if n >= KIB && n % KIB == 0 => write!(f, "{} KiB", n / KIB),
            n => write!(f, "{n} bytes"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::ByteSize;

    #[test]
    fn whole_mebibytes_and_kibibytes_are_named_and_the_rest_counted() {
        let written = |n| ByteSize(n).to_string();
        assert_eq!(written(4 * 1024 * 1024), "4 MiB");
        assert_eq!(written(1024 * 1024), "1 MiB");
        assert_eq!(written(1536 * 1024), "1536 KiB");
        assert_eq!(written(64 * 1024), "64 KiB");
        assert_eq!(written(1024), "1 KiB");
        assert_eq!(written(1025), "1025 bytes");
        assert_eq!(written(1000), "1000 bytes");
        assert_eq!(written(0), "0 bytes");
        assert_eq!(written(usize::MAX), format!("{} bytes", usize::MAX));
    }
}
