//! Text forms of DATE and TIMESTAMP values, shared by SQL literals, casts, input parsing and output.
//!
//! Invariants: a TIMESTAMP is microseconds since 1970-01-01T00:00:00Z (proleptic Gregorian
//! calendar, no leap seconds); a DATE is days since 1970-01-01. Parsing normalises every zone
//! offset to UTC, so two texts naming the same instant parse to the same value, and
//! `parse_timestamp(&format_timestamp(t)) == Some(t)` for every `t` of years 0000..=9999
//! (likewise for dates). The calendar arithmetic is hand-written to avoid a date-time dependency.

const MICROS_PER_SECOND: i64 = 1_000_000;
const MICROS_PER_DAY: i64 = 86_400 * MICROS_PER_SECOND;

/// Parses `YYYY-MM-DD[ T]HH:MM[:SS[.f...]][Z|±HH[:MM]]` (surrounding blanks ignored) into UTC
/// microseconds. Digits beyond microseconds are truncated; a missing zone means UTC.
pub fn parse_timestamp(s: &str) -> Option<i64> {
    let mut p = Scanner::new(s.trim());
    let days = p.date()?;
    if !p.eat_any(b" Tt") {
        return None;
    }
    let hour = p.number(2, 0, 23)?;
    p.expect(b':')?;
    let minute = p.number(2, 0, 59)?;
    let mut second = 0;
    let mut micros = 0;
    if p.eat(b':') {
        second = p.number(2, 0, 59)?;
        if p.eat(b'.') {
            micros = p.fraction()?;
        }
    }
    let offset_minutes = p.zone()?;
    p.end()?;
    let seconds = ((hour * 60 + minute - offset_minutes) * 60) + second;
    Some(i64::from(days) * MICROS_PER_DAY + seconds * MICROS_PER_SECOND + micros)
}

/// Parses `YYYY-MM-DD` (surrounding blanks ignored) into days since the epoch.
pub fn parse_date(s: &str) -> Option<i32> {
    let mut p = Scanner::new(s.trim());
    let days = p.date()?;
    p.end()?;
    Some(days)
}

/// Formats UTC microseconds as `YYYY-MM-DDTHH:MM:SS`, followed by `.` and the fraction of a
/// second (up to six digits, trailing zeros trimmed) only when it is not zero.
pub fn format_timestamp(micros: i64) -> String {
    let days = micros.div_euclid(MICROS_PER_DAY);
    let in_day = micros.rem_euclid(MICROS_PER_DAY);
    let seconds = in_day / MICROS_PER_SECOND;
    let fraction = in_day % MICROS_PER_SECOND;
    let mut out = format!(
        "{}T{:02}:{:02}:{:02}",
        format_days(days),
        seconds / 3600,
        seconds / 60 % 60,
        seconds % 60
    );
    if fraction != 0 {
        let digits = format!("{fraction:06}");
        out.push('.');
        out.push_str(digits.trim_end_matches('0'));
    }
    out
}

/// Formats days since the epoch as `YYYY-MM-DD`.
pub fn format_date(days: i32) -> String {
    format_days(i64::from(days))
}

fn format_days(days: i64) -> String {
    let (y, m, d) = civil_from_days(days);
    if (0..=9999).contains(&y) {
        format!("{y:04}-{m:02}-{d:02}")
    } else {
        format!("{y}-{m:02}-{d:02}")
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's `days_from_civil`).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let year_of_era = y - era * 400;
    let month_from_march = (month + 9) % 12;
    let day_of_year = (153 * month_from_march + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

/// Inverse of [`days_from_civil`]: `(year, month, day)`.
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z - era * 146_097;
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_from_march = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * month_from_march + 2) / 5 + 1;
    let month = if month_from_march < 10 {
        month_from_march + 3
    } else {
        month_from_march - 9
    };
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

fn days_in_month(year: i64, month: i64) -> i64 {
    match month {
        2 if year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// A cursor over ASCII text; every method returns `None` on a mismatch.
struct Scanner<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Scanner<'a> {
    fn new(s: &'a str) -> Self {
        Scanner {
            bytes: s.as_bytes(),
            pos: 0,
        }
    }

    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    fn eat(&mut self, b: u8) -> bool {
        self.eat_any(&[b])
    }

    fn eat_any(&mut self, set: &[u8]) -> bool {
        let hit = self.peek().is_some_and(|c| set.contains(&c));
        self.pos += usize::from(hit);
        hit
    }

    fn expect(&mut self, b: u8) -> Option<()> {
        self.eat(b).then_some(())
    }

    fn end(&self) -> Option<()> {
        (self.pos == self.bytes.len()).then_some(())
    }

    /// Exactly `width` digits with a value in `min..=max`.
    fn number(&mut self, width: usize, min: i64, max: i64) -> Option<i64> {
        let digits = self.bytes.get(self.pos..self.pos + width)?;
        if !digits.iter().all(u8::is_ascii_digit) {
            return None;
        }
        self.pos += width;
        let value = digits
            .iter()
            .fold(0i64, |acc, d| acc * 10 + i64::from(d - b'0'));
        (min..=max).contains(&value).then_some(value)
    }

    /// `YYYY-MM-DD` as days since the epoch.
    fn date(&mut self) -> Option<i32> {
        let year = self.number(4, 0, 9999)?;
        self.expect(b'-')?;
        let month = self.number(2, 1, 12)?;
        self.expect(b'-')?;
        let day = self.number(2, 1, days_in_month(year, month))?;
        i32::try_from(days_from_civil(year, month, day)).ok()
    }

    /// One to nine fraction digits as microseconds (truncated).
    fn fraction(&mut self) -> Option<i64> {
        let start = self.pos;
        while self.peek().is_some_and(|c| c.is_ascii_digit()) {
            self.pos += 1;
        }
        let digits = &self.bytes[start..self.pos];
        if digits.is_empty() || digits.len() > 9 {
            return None;
        }
        let micros = digits
            .iter()
            .chain(std::iter::repeat(&b'0'))
            .take(6)
            .fold(0i64, |acc, d| acc * 10 + i64::from(d - b'0'));
        Some(micros)
    }

    /// Optional zone: `Z`, or `±HH`, `±HH:MM`, `±HHMM`; minutes east of UTC.
    fn zone(&mut self) -> Option<i64> {
        if self.eat_any(b"Zz") || self.peek().is_none() {
            return Some(0);
        }
        let sign = match self.peek()? {
            b'+' => 1,
            b'-' => -1,
            _ => return None,
        };
        self.pos += 1;
        let hours = self.number(2, 0, 18)?;
        let minutes = if self.peek().is_none() {
            0
        } else {
            self.eat(b':');
            self.number(2, 0, 59)?
        };
        Some(sign * (hours * 60 + minutes))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: i64 = 1_752_832_860_000_000; // 2025-07-18T10:01:00Z

    #[test]
    fn parses_iso_forms_to_the_same_instant() {
        assert_eq!(parse_timestamp("2025-07-18T10:01:00"), Some(T));
        assert_eq!(parse_timestamp("2025-07-18 10:01"), Some(T));
        assert_eq!(parse_timestamp("2025-07-18T12:01:00+02:00"), Some(T));
        assert_eq!(parse_timestamp("2025-07-18T08:01:00-0200"), Some(T));
        assert_eq!(parse_timestamp("2025-07-18 10:01:00.5Z"), Some(T + 500_000));
        assert_eq!(
            parse_timestamp(" 2025-07-18T10:01:00.123456789 "),
            Some(T + 123_456)
        );
    }

    #[test]
    fn rejects_malformed_text() {
        for bad in [
            "",
            "2025-07-18",
            "2025-7-18T10:01",
            "2025-02-30T10:01",
            "2025-07-18T24:00",
            "2025-07-18T10:60",
            "2025-07-18T10:01:00.",
            "2025-07-18T10:01:00+2",
            "2025-07-18T10:01:00 UTC",
            "yesterday",
        ] {
            assert_eq!(parse_timestamp(bad), None, "{bad}");
        }
        assert_eq!(parse_date("2024-02-30"), None);
        assert_eq!(parse_date("2024-02-29T00:00"), None);
    }

    #[test]
    fn dates_count_days_from_the_epoch() {
        assert_eq!(parse_date("1970-01-01"), Some(0));
        assert_eq!(parse_date("2024-02-29"), Some(19_782));
        assert_eq!(parse_date("1969-12-31"), Some(-1));
        assert_eq!(format_date(-719_528), "0000-01-01");
    }

    #[test]
    fn formatting_round_trips() {
        assert_eq!(format_timestamp(T), "2025-07-18T10:01:00");
        assert_eq!(format_timestamp(T + 500_000), "2025-07-18T10:01:00.5");
        assert_eq!(format_timestamp(T + 1), "2025-07-18T10:01:00.000001");
        assert_eq!(format_timestamp(-1), "1969-12-31T23:59:59.999999");
        for t in [
            0,
            -1,
            T,
            T + 123_450,
            -62_135_596_800_000_000,
            253_402_300_799_999_999,
        ] {
            assert_eq!(parse_timestamp(&format_timestamp(t)), Some(t), "{t}");
        }
        for d in [-719_528, -1, 0, 19_782, 2_932_896] {
            assert_eq!(parse_date(&format_date(d)), Some(d), "{d}");
        }
    }
}
