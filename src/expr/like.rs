//! `LIKE` matching: `%` matches any run of characters, `_` exactly one, and the escape character
//! makes the next pattern character literal. Matching is case-sensitive, over Unicode chars.

#[derive(Clone, Copy, PartialEq, Eq)]
enum Piece {
    AnyRun,
    AnyOne,
    Literal(char),
}

fn pieces(pattern: &str, escape: char) -> Vec<Piece> {
    let mut out = Vec::new();
    let mut chars = pattern.chars();
    while let Some(c) = chars.next() {
        out.push(match c {
            // A trailing escape has nothing to escape, so it stands for itself.
            c if c == escape => Piece::Literal(chars.next().unwrap_or(escape)),
            '%' => Piece::AnyRun,
            '_' => Piece::AnyOne,
            c => Piece::Literal(c),
        });
    }
    out
}

/// Whether `text` matches `pattern`.
pub(crate) fn like(text: &str, pattern: &str, escape: char) -> bool {
    let text: Vec<char> = text.chars().collect();
    let pattern = pieces(pattern, escape);
    // Greedy match that backtracks only to the most recent `%`: with a single wildcard-run kind
    // that is enough, since a later `%` can absorb whatever an earlier one would have.
    let (mut t, mut p) = (0, 0);
    let mut resume: Option<(usize, usize)> = None;
    while t < text.len() {
        match pattern.get(p) {
            Some(Piece::AnyRun) => {
                resume = Some((p, t));
                p += 1;
            }
            Some(Piece::AnyOne) => (t, p) = (t + 1, p + 1),
            Some(Piece::Literal(c)) if *c == text[t] => (t, p) = (t + 1, p + 1),
            _ => match resume {
                Some((star, from)) => {
                    resume = Some((star, from + 1));
                    (t, p) = (from + 1, star + 1);
                }
                None => return false,
            },
        }
    }
    pattern[p..].iter().all(|piece| *piece == Piece::AnyRun)
}

#[cfg(test)]
mod tests {
    use super::like;

    #[test]
    fn wildcards_and_escapes() {
        assert!(like("DELETE", "DEL%", '\\'));
        assert!(like("DELETE", "%LET%", '\\'));
        assert!(like("DELETE", "D_L_T_", '\\'));
        assert!(!like("DELETE", "D_L_T", '\\'));
        assert!(like("", "%", '\\'));
        assert!(!like("", "_", '\\'));
        assert!(like("abcbc", "%bc", '\\'));
        assert!(like("a%b", "a\\%b", '\\'));
        assert!(!like("axb", "a\\%b", '\\'));
        assert!(like("a_b", "a!_b", '!'));
        assert!(like("mississippi", "m%iss%pi", '\\'));
        assert!(!like("delete", "DELETE", '\\'));
    }
}
