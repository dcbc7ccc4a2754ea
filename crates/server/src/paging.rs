//! Pages and times as both services' contracts carry them: page sizes with a
//! default and a ceiling, opaque page tokens (the position of the last row
//! returned), and Unix milliseconds as `google.protobuf.Timestamp`.

use base64::{Engine as _, engine::general_purpose::URL_SAFE_NO_PAD};

use crate::FieldViolation;

/// Rows per page when the caller asks for none.
pub const DEFAULT_PAGE_SIZE: u32 = 50;
/// Most rows per page, whatever the caller asks for.
pub const MAX_PAGE_SIZE: u32 = 500;

/// The page size a caller asked for in `field`: the default for 0, at most
/// [`MAX_PAGE_SIZE`], refused when negative.
pub fn page_size(field: &str, requested: i32) -> Result<u32, FieldViolation> {
    match u32::try_from(requested) {
        Ok(0) => Ok(DEFAULT_PAGE_SIZE),
        Ok(n) => Ok(n.min(MAX_PAGE_SIZE)),
        Err(_) => Err(FieldViolation::new(field, "must not be negative")),
    }
}

/// The token of the page after the row at `position` (its creation time and
/// id); empty when there is no next page.
pub fn encode_page_token(position: Option<(i64, &str)>) -> String {
    position.map_or_else(String::new, |(time, id)| {
        URL_SAFE_NO_PAD.encode(format!("{time}/{id}"))
    })
}

/// The position a page token of `field` names; `None` for the first page.
/// A token this service did not issue is refused.
pub fn decode_page_token(
    field: &str,
    token: &str,
) -> Result<Option<(i64, String)>, FieldViolation> {
    if token.is_empty() {
        return Ok(None);
    }
    let invalid = || FieldViolation::new(field, "is not a page token this service issued");
    let text = URL_SAFE_NO_PAD
        .decode(token)
        .ok()
        .and_then(|b| String::from_utf8(b).ok())
        .ok_or_else(invalid)?;
    let (time, id) = text.split_once('/').ok_or_else(invalid)?;
    Ok(Some((time.parse().map_err(|_| invalid())?, id.to_owned())))
}

/// Unix milliseconds as a protobuf timestamp.
pub fn timestamp(millis: i64) -> prost_types::Timestamp {
    prost_types::Timestamp {
        seconds: millis.div_euclid(1000),
        nanos: i32::try_from(millis.rem_euclid(1000) * 1_000_000).unwrap_or(0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_page_token_names_the_position_it_was_made_from() {
        let token = encode_page_token(Some((1_700_000_000_000, "abc")));
        assert_eq!(
            decode_page_token("page_token", &token),
            Ok(Some((1_700_000_000_000, "abc".to_owned())))
        );
        assert_eq!(decode_page_token("page_token", ""), Ok(None));
        assert!(decode_page_token("page_token", "not-ours").is_err());
        assert_eq!(encode_page_token(None), "");
    }

    #[test]
    fn page_sizes_have_a_default_and_a_ceiling() {
        assert_eq!(page_size("page_size", 0), Ok(DEFAULT_PAGE_SIZE));
        assert_eq!(page_size("page_size", 10_000), Ok(MAX_PAGE_SIZE));
        assert!(page_size("page_size", -1).is_err());
    }

    #[test]
    fn milliseconds_before_1970_keep_positive_nanos() {
        let t = timestamp(-1);
        assert_eq!((t.seconds, t.nanos), (-1, 999_000_000));
    }
}
