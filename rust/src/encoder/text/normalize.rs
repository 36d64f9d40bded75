//! Hugging Face `tokenizers`' `BertNormalizer` followed by its `BertPreTokenizer`, fused into one pass that
//! hands each pre-token ("word") to a callback as it completes.
//!
//! ASCII characters take a table-driven path (one lookup per byte). Runs of other characters go through the
//! same steps as `tokenizers`, in its order and with its Unicode tables (`unicode_categories`,
//! `unicode-normalization-alignments`): drop control characters, whitespace to ' ', spaces around CJK
//! ideographs, NFD and removal of non-spacing marks, lowercase; then split on whitespace and isolate
//! punctuation. A run is only cut at an ASCII character that survives cleaning: such a character is a
//! canonical starter, so NFD's reordering of combining marks never crosses it and the result is the one of
//! normalising the whole text at once.

use unicode_categories::UnicodeCategories;
use unicode_normalization_alignments::UnicodeNormalization;

/// The `BertNormalizer` settings of a tokenizer.json (`strip_accents: null` means "as `lowercase`").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NormalizerOptions {
    pub clean_text: bool,
    pub handle_chinese_chars: bool,
    pub strip_accents: bool,
    pub lowercase: bool,
}

/// What one ASCII byte does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum AsciiClass {
    /// Removed by `clean_text` (control characters); does not end a run of non-ASCII characters.
    Drop,
    /// Ends the current word.
    Space,
    /// A word of its own.
    Punct,
    /// Part of a word, stored as this byte (lowercased when asked).
    Word(u8),
}

/// `tokenizers`' `is_whitespace` of `clean_text` (tab, newline and return count as whitespace).
fn is_clean_whitespace(c: char) -> bool {
    matches!(c, '\t' | '\n' | '\r') || c.is_whitespace()
}

/// `tokenizers`' `is_control`: Unicode "Other" (Cc, Cf, Cn, Co, Cs) except tab, newline and return.
fn is_control(c: char) -> bool {
    !matches!(c, '\t' | '\n' | '\r') && c.is_other()
}

/// The CJK ideograph blocks `handle_chinese_chars` puts spaces around.
fn is_chinese_char(c: char) -> bool {
    matches!(
        c as u32,
        0x4E00..=0x9FFF
            | 0x3400..=0x4DBF
            | 0x20000..=0x2A6DF
            | 0x2A700..=0x2B73F
            | 0x2B740..=0x2B81F
            | 0x2B920..=0x2CEAF
            | 0xF900..=0xFAFF
            | 0x2F800..=0x2FA1F
    )
}

/// `BertPreTokenizer`'s punctuation: ASCII punctuation (including symbols such as `$` and `+`) or Unicode P*.
fn is_bert_punct(c: char) -> bool {
    c.is_ascii_punctuation() || c.is_punctuation()
}

/// Normalises and pre-tokenises texts; holds the per-byte table and reusable buffers.
#[derive(Debug, Clone)]
pub struct BertSplitter {
    options: NormalizerOptions,
    ascii: [AsciiClass; 128],
}

/// Buffers one splitting pass reuses (one per thread).
#[derive(Debug, Default)]
pub struct SplitScratch {
    word: Vec<u8>,
    pending: String,
    staged: String,
}

impl BertSplitter {
    pub fn new(options: NormalizerOptions) -> Self {
        let ascii = std::array::from_fn(|b| {
            let byte = b as u8;
            let c = char::from(byte);
            if options.clean_text && (byte == 0 || is_control(c)) {
                AsciiClass::Drop
            } else if c.is_whitespace() || (options.clean_text && is_clean_whitespace(c)) {
                AsciiClass::Space
            } else if is_bert_punct(c) {
                AsciiClass::Punct
            } else if options.lowercase {
                AsciiClass::Word(byte.to_ascii_lowercase())
            } else {
                AsciiClass::Word(byte)
            }
        });
        Self { options, ascii }
    }

    /// Calls `emit` with each word of `text` (UTF-8 bytes, never empty), in order, until it returns false.
    /// Returns false when `emit` stopped it.
    pub fn split<F: FnMut(&[u8]) -> bool>(
        &self,
        text: &str,
        scratch: &mut SplitScratch,
        mut emit: F,
    ) -> bool {
        let SplitScratch {
            word,
            pending,
            staged,
        } = scratch;
        word.clear();
        pending.clear();
        let bytes = text.as_bytes();
        let mut i = 0;
        while let Some(&b) = bytes.get(i) {
            if b >= 0x80 {
                let Some(c) = text.get(i..).and_then(|rest| rest.chars().next()) else {
                    break; // unreachable for a &str: i is always at a character boundary
                };
                pending.push(c);
                i += c.len_utf8();
                continue;
            }
            i += 1;
            let class = self.ascii[usize::from(b)];
            if class == AsciiClass::Drop {
                continue;
            }
            if !pending.is_empty() && !self.flush(pending, staged, word, &mut emit) {
                return false;
            }
            match class {
                AsciiClass::Word(byte) => word.push(byte),
                AsciiClass::Space => {
                    if !end_word(word, &mut emit) {
                        return false;
                    }
                }
                AsciiClass::Punct => {
                    if !end_word(word, &mut emit) || !emit(&[b]) {
                        return false;
                    }
                }
                AsciiClass::Drop => {}
            }
        }
        if !pending.is_empty() && !self.flush(pending, staged, word, &mut emit) {
            return false;
        }
        end_word(word, &mut emit)
    }

    /// Runs a pending run of non-ASCII characters through the full normaliser and feeds the result to the
    /// pre-tokeniser. Returns false when `emit` asked to stop.
    #[inline(never)]
    fn flush<F: FnMut(&[u8]) -> bool>(
        &self,
        pending: &mut String,
        staged: &mut String,
        word: &mut Vec<u8>,
        emit: &mut F,
    ) -> bool {
        let o = self.options;
        staged.clear();
        for c in pending.chars() {
            let c = if o.clean_text {
                if c == '\0' || c == '\u{fffd}' || is_control(c) {
                    continue;
                }
                if is_clean_whitespace(c) {
                    ' '
                } else {
                    c
                }
            } else {
                c
            };
            if o.handle_chinese_chars && is_chinese_char(c) {
                staged.push(' ');
                staged.push(c);
                staged.push(' ');
            } else {
                staged.push(c);
            }
        }
        pending.clear();
        let mut keep_going = true;
        let mut feed = |c: char| {
            if !keep_going {
                return;
            }
            if o.lowercase {
                for lower in c.to_lowercase() {
                    keep_going = keep_going && feed_char(lower, word, emit);
                }
            } else {
                keep_going = feed_char(c, word, emit);
            }
        };
        if o.strip_accents {
            for (c, _) in staged.as_str().nfd() {
                if !c.is_mark_nonspacing() {
                    feed(c);
                }
            }
        } else {
            for c in staged.chars() {
                feed(c);
            }
        }
        keep_going
    }
}

/// The pre-tokeniser's step for one normalised character.
fn feed_char<F: FnMut(&[u8]) -> bool>(c: char, word: &mut Vec<u8>, emit: &mut F) -> bool {
    if c.is_whitespace() {
        return end_word(word, emit);
    }
    let mut utf8 = [0u8; 4];
    let encoded = c.encode_utf8(&mut utf8).as_bytes();
    if is_bert_punct(c) {
        return end_word(word, emit) && emit(encoded);
    }
    word.extend_from_slice(encoded);
    true
}

/// Emits the current word (if any) and clears it.
fn end_word<F: FnMut(&[u8]) -> bool>(word: &mut Vec<u8>, emit: &mut F) -> bool {
    if word.is_empty() {
        return true;
    }
    let go_on = emit(word);
    word.clear();
    go_on
}
