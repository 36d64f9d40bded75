//! The CSV/TSV rows of `score`'s output (python/jeirt_lite/_io/writers.py `CsvWriter`), formatted in one pass
//! into bytes: the same bytes Python's `csv.writer` writes for the same values, with every float printed as
//! Python's `f"{x:.7g}"` prints it.
//!
//! Formatting and writing the rows in Python was the largest share of the calling thread's work in `score`,
//! which is what the encoding threads wait on.

use std::io::Write;

/// Significant digits of every printed float (float32 carries about 7).
const DIGITS: usize = 7;

/// One chunk of scores: `n` rows of `k` ranked LLMs, and optionally every LLM's probability.
pub struct ScoreRows<'a> {
    /// Each row's id as text.
    pub ids: &'a [&'a str],
    /// `n x k` LLM indices into `names`, best first.
    pub indices: &'a [u32],
    /// `n x k` probabilities of those LLMs.
    pub probabilities: &'a [f32],
    /// `n` difficulties.
    pub difficulty: &'a [f32],
    /// `n x names.len()` probabilities of every LLM, or empty.
    pub all_probabilities: &'a [f32],
    /// `n` flags, routing by a minimum probability: true where no LLM cleared it; or empty (no such column).
    pub fallback: &'a [bool],
}

/// Appends `x` as Python's `format(x, ".7g")` gives it (for the float64 value of a float32).
pub fn push_g7(out: &mut Vec<u8>, x: f64) {
    if x.is_nan() {
        out.extend_from_slice(b"nan");
        return;
    }
    if x.is_infinite() {
        out.extend_from_slice(if x < 0.0 { b"-inf" } else { b"inf" });
        return;
    }
    if x == 0.0 {
        out.extend_from_slice(if x.is_sign_negative() { b"-0" } else { b"0" });
        return;
    }
    // Rust's exact formatting rounds the exact binary value half to even, as Python's does. Written into a
    // buffer on the stack: "d.dddddde-308" at most.
    let mut buffer = [0u8; 32];
    let mut cursor = std::io::Cursor::new(&mut buffer[..]);
    let _ = write!(cursor, "{:.*e}", DIGITS - 1, x.abs());
    let written = cursor.position() as usize;
    let scientific = std::str::from_utf8(&buffer[..written]).unwrap_or("0e0");
    let (mantissa, exponent) = scientific.split_once('e').unwrap_or((scientific, "0"));
    let exponent: i32 = exponent.parse().unwrap_or(0);
    let mut digits = [b'0'; DIGITS];
    for (slot, digit) in digits
        .iter_mut()
        .zip(mantissa.bytes().filter(u8::is_ascii_digit))
    {
        *slot = digit;
    }
    if x < 0.0 {
        out.push(b'-');
    }
    if (-4..DIGITS as i32).contains(&exponent) {
        // Fixed point with DIGITS significant digits, trailing zeros (and a bare point) dropped.
        if exponent < 0 {
            out.extend_from_slice(b"0.");
            out.extend(std::iter::repeat_n(b'0', (-exponent - 1) as usize));
            out.extend_from_slice(&digits);
        } else {
            let whole = exponent as usize + 1;
            out.extend_from_slice(&digits[..whole]);
            out.push(b'.');
            out.extend_from_slice(&digits[whole..]);
        }
        trim_fraction(out);
    } else {
        out.push(digits[0]);
        out.push(b'.');
        out.extend_from_slice(&digits[1..]);
        trim_fraction(out);
        let sign = if exponent < 0 { '-' } else { '+' };
        let _ = write!(out, "e{sign}{:02}", exponent.unsigned_abs());
    }
}

/// Drops the trailing zeros of the number just written to `out` (which holds a point), and the point if
/// nothing follows it.
fn trim_fraction(out: &mut Vec<u8>) {
    while out.last() == Some(&b'0') {
        out.pop();
    }
    if out.last() == Some(&b'.') {
        out.pop();
    }
}

/// Appends `field` as Python's `csv.writer` (excel dialect, minimal quoting) writes it: in quotes, with
/// quotes doubled, when it holds the delimiter, a quote or a line end.
pub fn push_field(out: &mut Vec<u8>, field: &str, delimiter: u8) {
    let bytes = field.as_bytes();
    if bytes
        .iter()
        .any(|&c| c == delimiter || matches!(c, b'"' | b'\r' | b'\n'))
    {
        out.push(b'"');
        for &c in bytes {
            if c == b'"' {
                out.push(b'"');
            }
            out.push(c);
        }
        out.push(b'"');
    } else {
        out.extend_from_slice(bytes);
    }
}

/// The rows of `scores`, each ended by `\r\n` as `csv.writer` ends them: id, then per rank the LLM's name and
/// probability, the difficulty, every LLM's probability when given, and the fallback flag (`true`/`false`) when
/// given. `Err` names an index outside `names` or arrays of the wrong length.
pub fn format_score_rows(
    scores: &ScoreRows<'_>,
    names: &[&str],
    delimiter: u8,
) -> Result<Vec<u8>, String> {
    let n = scores.ids.len();
    let k = scores.indices.len().checked_div(n).unwrap_or(0);
    let all = if scores.all_probabilities.is_empty() {
        0
    } else {
        names.len()
    };
    let flags = if scores.fallback.is_empty() { 0 } else { 1 };
    if scores.indices.len() != n * k
        || scores.probabilities.len() != n * k
        || scores.difficulty.len() != n
        || scores.all_probabilities.len() != n * all
        || scores.fallback.len() != n * flags
    {
        return Err(format!(
            "score rows of mismatched lengths: {n} ids, {} indices, {} probabilities, {} difficulties, {} \
             probabilities of every LLM, {} fallback flags",
            scores.indices.len(),
            scores.probabilities.len(),
            scores.difficulty.len(),
            scores.all_probabilities.len(),
            scores.fallback.len()
        ));
    }
    let quoted: Vec<Vec<u8>> = names
        .iter()
        .map(|name| {
            let mut field = Vec::with_capacity(name.len() + 2);
            push_field(&mut field, name, delimiter);
            field
        })
        .collect();
    let mut out = Vec::with_capacity(n * (24 + k * 24 + all * 12));
    for (row, id) in scores.ids.iter().enumerate() {
        push_field(&mut out, id, delimiter);
        for rank in row * k..(row + 1) * k {
            let index = scores.indices[rank] as usize;
            let name = quoted
                .get(index)
                .ok_or_else(|| format!("LLM index {index} outside the {} LLMs", names.len()))?;
            out.push(delimiter);
            out.extend_from_slice(name);
            out.push(delimiter);
            push_g7(&mut out, f64::from(scores.probabilities[rank]));
        }
        out.push(delimiter);
        push_g7(&mut out, f64::from(scores.difficulty[row]));
        for &p in &scores.all_probabilities[row * all..(row + 1) * all] {
            out.push(delimiter);
            push_g7(&mut out, f64::from(p));
        }
        if let Some(&flag) = scores.fallback.get(row) {
            out.push(delimiter);
            out.extend_from_slice(if flag { b"true" } else { b"false" });
        }
        out.extend_from_slice(b"\r\n");
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn g7(x: f64) -> String {
        let mut out = Vec::new();
        push_g7(&mut out, x);
        String::from_utf8(out).unwrap_or_default()
    }

    #[test]
    fn floats_print_as_python_g7() {
        // Expected strings are Python's f"{x:.7g}".
        let cases: [(f64, &str); 16] = [
            (0.0, "0"),
            (-0.0, "-0"),
            (1.0, "1"),
            (0.5, "0.5"),
            (0.123456789, "0.1234568"),
            (0.00048828125, "0.0004882812"),
            (1.00000025, "1"),
            (3.0517578125e-05, "3.051758e-05"),
            (1e-4, "0.0001"),
            (9.9999999e-5, "0.0001"),
            (9.99999949e-5, "9.999999e-05"),
            (1234567.0, "1234567"),
            (12345678.0, "1.234568e+07"),
            (1e100, "1e+100"),
            (-2.5e-300, "-2.5e-300"),
            (f64::INFINITY, "inf"),
        ];
        for (x, want) in cases {
            assert_eq!(g7(x), want, "{x:e}");
        }
        assert_eq!(g7(f64::NAN), "nan");
        assert_eq!(g7(f64::NEG_INFINITY), "-inf");
    }

    #[test]
    fn fields_are_quoted_as_csv_writer_quotes_them() {
        let mut out = Vec::new();
        for field in [
            "plain",
            "a,b",
            "say \"hi\"",
            "two\nlines",
            "cr\r",
            "tab\there",
            "",
        ] {
            push_field(&mut out, field, b',');
            out.push(b'|');
        }
        assert_eq!(
            String::from_utf8(out).unwrap_or_default(),
            "plain|\"a,b\"|\"say \"\"hi\"\"\"|\"two\nlines\"|\"cr\r\"|tab\there||"
        );
        let mut tsv = Vec::new();
        push_field(&mut tsv, "a,b\tc", b'\t');
        assert_eq!(tsv, b"\"a,b\tc\"");
    }

    #[test]
    fn rows_hold_id_ranks_difficulty_and_every_probability() {
        let scores = ScoreRows {
            ids: &["q1", "q,2"],
            indices: &[1, 0, 0, 1],
            probabilities: &[0.75, 0.25, 0.5, 0.125],
            difficulty: &[1.5, 2.0],
            all_probabilities: &[0.25, 0.75, 0.5, 0.125],
            fallback: &[],
        };
        let rows = format_score_rows(&scores, &["a", "b"], b',').unwrap_or_default();
        assert_eq!(
            String::from_utf8(rows).unwrap_or_default(),
            "q1,b,0.75,a,0.25,1.5,0.25,0.75\r\n\"q,2\",a,0.5,b,0.125,2,0.5,0.125\r\n"
        );
        let flagged = ScoreRows {
            fallback: &[false, true],
            ..scores
        };
        let rows = format_score_rows(&flagged, &["a", "b"], b'\t').unwrap_or_default();
        assert_eq!(
            String::from_utf8(rows).unwrap_or_default(),
            "q1\tb\t0.75\ta\t0.25\t1.5\t0.25\t0.75\tfalse\r\nq,2\ta\t0.5\tb\t0.125\t2\t0.5\t0.125\ttrue\r\n"
        );
        let bad = ScoreRows {
            indices: &[2, 0, 0, 1],
            ..scores
        };
        assert!(format_score_rows(&bad, &["a", "b"], b',').is_err());
    }

    #[test]
    fn each_array_of_the_wrong_length_is_named_alone() {
        // Three rows of two ranks over three LLMs: no product of two of those counts equals their sum.
        let good = ScoreRows {
            ids: &["q1", "q2", "q3"],
            indices: &[1, 0, 0, 1, 2, 0],
            probabilities: &[0.75, 0.25, 0.5, 0.125, 0.5, 0.25],
            difficulty: &[1.5, 2.0, 1.0],
            all_probabilities: &[0.25, 0.75, 0.5, 0.125, 0.5, 0.25, 0.5, 0.25, 0.75],
            fallback: &[true, false, true],
        };
        let names = ["a", "b", "c"];
        assert!(format_score_rows(&good, &names, b',').is_ok());
        let wrong = [
            ScoreRows {
                indices: &[1, 0, 0, 1, 2],
                ..good
            },
            ScoreRows {
                indices: &[1, 0, 0, 1, 2],
                probabilities: &[0.75, 0.25, 0.5, 0.125, 0.5],
                ..good
            },
            ScoreRows {
                probabilities: &[0.75, 0.25, 0.5, 0.125, 0.5],
                ..good
            },
            ScoreRows {
                difficulty: &[1.5, 2.0],
                ..good
            },
            ScoreRows {
                all_probabilities: &[0.25, 0.75, 0.5, 0.125, 0.5, 0.25],
                ..good
            },
            ScoreRows {
                fallback: &[true, false],
                ..good
            },
        ];
        for scores in &wrong {
            let message = format_score_rows(scores, &names, b',').err();
            assert_eq!(
                message,
                Some(format!(
                    "score rows of mismatched lengths: 3 ids, {} indices, {} probabilities, {} difficulties, {} \
                     probabilities of every LLM, {} fallback flags",
                    scores.indices.len(),
                    scores.probabilities.len(),
                    scores.difficulty.len(),
                    scores.all_probabilities.len(),
                    scores.fallback.len()
                ))
            );
        }
    }
}
