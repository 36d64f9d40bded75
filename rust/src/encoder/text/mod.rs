//! A BERT WordPiece tokenizer that gives the token ids Hugging Face `tokenizers` gives for a tokenizer.json
//! of the shape BERT-family sentence encoders ship (all-MiniLM-L6-v2 among them): added (special) tokens
//! matched in the raw text, `BertNormalizer`, `BertPreTokenizer`, `WordPiece`, `[CLS] text [SEP]`, and
//! truncation on the right at `max_length` tokens, the two special tokens included.
//!
//! One pass per text, no allocation once the scratch buffers have grown; it stops reading a text as soon as
//! `max_length` tokens are found.

mod normalize;
mod wordpiece;

pub use normalize::NormalizerOptions;
use normalize::{BertSplitter, SplitScratch};
pub use wordpiece::VocabError;
use wordpiece::WordPiece;

/// Everything read from a tokenizer.json that the fast tokenizer needs.
#[derive(Debug, Clone)]
pub struct TokenizerSpec {
    /// `(token, id)` for every vocabulary entry.
    pub vocab: Vec<(String, u32)>,
    pub unk_id: u32,
    pub continuation_prefix: String,
    pub max_input_chars_per_word: usize,
    /// Tokens matched verbatim in the raw text before normalisation (`normalized: false`, no strip flags).
    pub added_tokens: Vec<(String, u32)>,
    pub normalizer: NormalizerOptions,
    /// Prepended and appended to every text (the post-processor's `[CLS]` and `[SEP]`).
    pub cls_id: u32,
    pub sep_id: u32,
    /// Longest token sequence, special tokens included; at least 3.
    pub max_length: usize,
}

/// The fast tokenizer.
#[derive(Debug, Clone)]
pub struct BertTokenizer {
    splitter: BertSplitter,
    wordpiece: WordPiece,
    /// Added tokens, longest first within the same first byte (leftmost-longest matching).
    added: Vec<(Vec<u8>, u32)>,
    /// `added_first[b]`: some added token starts with byte `b`.
    added_first: [bool; 256],
    cls_id: u32,
    sep_id: u32,
    max_length: usize,
}

/// Buffers one thread reuses across texts.
#[derive(Debug, Default)]
pub struct TokenizerScratch {
    split: SplitScratch,
}

impl BertTokenizer {
    pub fn new(spec: &TokenizerSpec) -> Result<Self, String> {
        if spec.max_length < 3 {
            return Err(format!(
                "max_length must be at least 3, got {}",
                spec.max_length
            ));
        }
        let wordpiece = WordPiece::new(
            &spec.vocab,
            spec.unk_id,
            &spec.continuation_prefix,
            spec.max_input_chars_per_word,
        )
        .map_err(|e| match e {
            VocabError::Duplicate(token) => format!("vocabulary has {token:?} twice"),
            VocabError::Empty => "vocabulary is empty".to_string(),
        })?;
        let mut added: Vec<(Vec<u8>, u32)> = spec
            .added_tokens
            .iter()
            .filter(|(token, _)| !token.is_empty())
            .map(|(token, id)| (token.as_bytes().to_vec(), *id))
            .collect();
        added.sort_by_key(|token| std::cmp::Reverse(token.0.len()));
        let mut added_first = [false; 256];
        for (token, _) in &added {
            if let Some(&b) = token.first() {
                added_first[usize::from(b)] = true;
            }
        }
        Ok(Self {
            splitter: BertSplitter::new(spec.normalizer),
            wordpiece,
            added,
            added_first,
            cls_id: spec.cls_id,
            sep_id: spec.sep_id,
            max_length: spec.max_length,
        })
    }

    /// The added token starting at byte `at` of `bytes`, longest first: `(length, id)`.
    fn added_at(&self, bytes: &[u8], at: usize) -> Option<(usize, u32)> {
        let rest = bytes.get(at..)?;
        self.added
            .iter()
            .find(|(token, _)| rest.starts_with(token))
            .map(|(token, id)| (token.len(), *id))
    }

    /// The ids of `text` (`[CLS] ... [SEP]`, truncated) into `ids` (cleared first).
    pub fn encode_into(&self, text: &str, ids: &mut Vec<u32>, scratch: &mut TokenizerScratch) {
        ids.clear();
        ids.push(self.cls_id);
        let limit = self.max_length - 1; // room for [SEP]
        let bytes = text.as_bytes();
        let mut segment_start = 0;
        let mut at = 0;
        while at < bytes.len() && ids.len() < limit {
            let b = bytes.get(at).copied().unwrap_or(0);
            let found = if self.added_first[usize::from(b)] {
                self.added_at(bytes, at)
            } else {
                None
            };
            let Some((len, id)) = found else {
                at += 1;
                continue;
            };
            self.encode_segment(
                text.get(segment_start..at).unwrap_or(""),
                ids,
                limit,
                scratch,
            );
            if ids.len() < limit {
                ids.push(id);
            }
            at += len;
            segment_start = at;
        }
        if ids.len() < limit {
            self.encode_segment(text.get(segment_start..).unwrap_or(""), ids, limit, scratch);
        }
        ids.push(self.sep_id);
    }

    /// WordPiece ids of a text segment without added tokens, until `ids` holds `limit` ids.
    fn encode_segment(
        &self,
        segment: &str,
        ids: &mut Vec<u32>,
        limit: usize,
        scratch: &mut TokenizerScratch,
    ) {
        if segment.is_empty() || ids.len() >= limit {
            return;
        }
        self.splitter.split(segment, &mut scratch.split, |word| {
            self.wordpiece.tokenize(word, ids, limit);
            ids.len() < limit
        });
    }
}

#[cfg(test)]
mod tests;
