//! Finding the next byte that matters to the CSV parser (`csv_records`), eight bytes at a time: most of a
//! question bank is the text inside fields, and a byte-at-a-time search is the parser's hot loop.

const ONES: u64 = 0x0101_0101_0101_0101;
const HIGHS: u64 = 0x8080_8080_8080_8080;

/// The high bit of every zero byte of `word`; a byte above a zero byte may be flagged too, never one below it,
/// so the lowest flag is exact.
fn zero_bytes(word: u64) -> u64 {
    word.wrapping_sub(ONES) & !word & HIGHS
}

/// The index of the first byte of `bytes` equal to `a`, `b` or `c`, or its length when there is none.
pub fn position_of_any3(bytes: &[u8], a: u8, b: u8, c: u8) -> usize {
    let (a_word, b_word, c_word) = (
        ONES * u64::from(a),
        ONES * u64::from(b),
        ONES * u64::from(c),
    );
    let mut chunks = bytes.chunks_exact(8);
    let mut start = 0;
    for chunk in &mut chunks {
        let mut eight = [0u8; 8];
        eight.copy_from_slice(chunk);
        let word = u64::from_le_bytes(eight); // the first byte lowest
        let found =
            zero_bytes(word ^ a_word) | zero_bytes(word ^ b_word) | zero_bytes(word ^ c_word);
        if found != 0 {
            return start + (found.trailing_zeros() / 8) as usize;
        }
        start += 8;
    }
    let rest = chunks.remainder();
    start
        + rest
            .iter()
            .position(|&byte| byte == a || byte == b || byte == c)
            .unwrap_or(rest.len())
}

#[cfg(test)]
mod tests {
    use super::position_of_any3;

    #[test]
    fn finds_the_first_of_the_three_bytes_wherever_it_is_and_the_length_when_none_is_there() {
        // Every length up to three words and every position of each sought byte, with sought bytes after it and
        // bytes with the high bit set around it.
        for len in 0..24 {
            let mut bytes = vec![b'a'; len];
            assert_eq!(position_of_any3(&bytes, b',', b'\n', b'\r'), len);
            for at in 0..len {
                for sought in [b',', b'\n', b'\r'] {
                    bytes.fill(0x80 | (at as u8));
                    bytes[at] = sought;
                    if at + 1 < len {
                        bytes[at + 1] = b'\r';
                    }
                    if at + 2 < len {
                        bytes[at + 2] = sought + 1;
                    }
                    assert_eq!(
                        position_of_any3(&bytes, b',', b'\n', b'\r'),
                        at,
                        "{bytes:?}"
                    );
                }
            }
        }
    }
}
