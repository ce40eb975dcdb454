//! The file's shape, both ways: `user_id,since`, one followed user a line.

use chrono::DateTime;
use relations_domain::UserId;

use crate::error::ApiError;

/// Most data lines an import takes (the header is not counted).
pub const MAX_IMPORT_LINES: usize = 1000;

/// The CSV header, both ways.
pub const HEADER: [&str; 2] = ["user_id", "since"];

/// One CSV record, with its line end.
pub fn csv_line<T: AsRef<[u8]>>(fields: impl IntoIterator<Item = T>) -> Vec<u8> {
    let mut writer = csv::Writer::from_writer(Vec::new());
    writer
        .write_record(fields)
        .expect("writing to memory cannot fail");
    writer.into_inner().expect("writing to memory cannot fail")
}

/// The data lines of an import body: `(line number, user id)`, the header being line 1. Each
/// line is one CSV record (ids and times never hold a line break), so a fault is reported
/// with the line a person sees in the file, blank lines counted. An empty body (nothing but
/// white space) lists nobody, as a header alone does: there is no line to be at fault.
pub fn parse(body: &[u8]) -> Result<Vec<(usize, i64)>, ApiError> {
    let text = body.strip_prefix("\u{feff}".as_bytes()).unwrap_or(body);
    if text.iter().all(u8::is_ascii_whitespace) {
        return Ok(Vec::new());
    }
    let bad = |line: usize, message: String| ApiError::BadCsv {
        code: "INVALID_CSV",
        line,
        message,
    };
    let record = |line: usize, text: &[u8]| -> Result<Vec<String>, ApiError> {
        let mut reader = csv::ReaderBuilder::new()
            .has_headers(false)
            .flexible(true)
            .trim(csv::Trim::All)
            .from_reader(text);
        match reader.records().next() {
            None => Ok(Vec::new()),
            Some(Ok(fields)) => Ok(fields.iter().map(str::to_owned).collect()),
            Some(Err(e)) => Err(bad(line, e.to_string())),
        }
    };
    let mut numbered = body
        .split(|&b| b == b'\n')
        .enumerate()
        .map(|(i, l)| (i + 1, l));
    let header = match numbered.next() {
        // Spreadsheets often begin a UTF-8 file with a byte-order mark.
        Some((_, text)) => record(1, text.strip_prefix("\u{feff}".as_bytes()).unwrap_or(text))?,
        None => Vec::new(),
    };
    if header != HEADER && header != HEADER[..1] {
        return Err(bad(
            1,
            format!("expected the header user_id,since (or user_id), got {header:?}"),
        ));
    }
    let mut lines = Vec::new();
    for (line, text) in numbered {
        let fields = record(line, text)?;
        if fields.iter().all(String::is_empty) {
            continue;
        }
        if lines.len() == MAX_IMPORT_LINES {
            return Err(ApiError::BadCsv {
                code: "TOO_MANY_LINES",
                line,
                message: format!("at most {MAX_IMPORT_LINES} lines after the header"),
            });
        }
        if fields.len() > header.len() {
            return Err(bad(line, format!("expected {} fields", header.len())));
        }
        let id = &fields[0];
        let user: UserId = id
            .parse()
            .map_err(|_| bad(line, format!("user_id {id:?} is not a user id")))?;
        if let Some(since) = fields.get(1).filter(|s| !s.is_empty()) {
            DateTime::parse_from_rfc3339(since)
                .map_err(|_| bad(line, format!("since {since:?} is not an RFC 3339 time")))?;
        }
        lines.push((line, user.get()));
    }
    Ok(lines)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn failure(body: &str) -> (String, usize) {
        match parse(body.as_bytes()) {
            Err(ApiError::BadCsv { code, line, .. }) => (code.to_owned(), line),
            other => panic!("{body:?}: {other:?}"),
        }
    }

    #[test]
    fn reads_the_exports_shape_and_names_the_line_at_fault() {
        let lines = parse(b"user_id,since\n3,2026-11-23T10:00:00Z\n\n4,\r\n5\n").unwrap();
        assert_eq!(lines, vec![(2, 3), (4, 4), (5, 5)]);
        assert_eq!(parse(b"user_id\n7\n").unwrap(), vec![(2, 7)]);
        assert_eq!(
            parse("\u{feff}user_id\n7".as_bytes()).unwrap(),
            vec![(2, 7)]
        );
        assert_eq!(parse(b"").unwrap(), vec![]);
        assert_eq!(parse("\u{feff}\r\n\n".as_bytes()).unwrap(), vec![]);
        assert_eq!(failure("\n3\n"), ("INVALID_CSV".into(), 1));
        assert_eq!(failure("id,since\n3\n"), ("INVALID_CSV".into(), 1));
        assert_eq!(
            failure("user_id,since\n3\nabc\n"),
            ("INVALID_CSV".into(), 3)
        );
        assert_eq!(failure("user_id,since\n0\n"), ("INVALID_CSV".into(), 2));
        assert_eq!(
            failure("user_id,since\n3,yesterday\n"),
            ("INVALID_CSV".into(), 2)
        );
        assert_eq!(failure("user_id\n3,4\n"), ("INVALID_CSV".into(), 2));
        let many: String = std::iter::once("user_id".to_owned())
            .chain((1..=1001).map(|i| i.to_string()))
            .collect::<Vec<_>>()
            .join("\n");
        assert_eq!(failure(&many), ("TOO_MANY_LINES".into(), 1002));
        assert_eq!(csv_line(["1", "a,b"]), b"1,\"a,b\"\n".to_vec());
    }
}
