//! Timestamps (go-yaml's four time.Parse layouts)

use super::*;

/// go-yaml's `parseTimestamp`: `YYYY-` first, then the first of these Go
/// layouts that parses: `2006-1-2T15:4:5.999999999Z07:00`, the same with a
/// lower-case `t`, `2006-1-2 15:4:5.999999999`, `2006-1-2`.
pub(super) fn parse_timestamp(s: &str) -> Option<GoTime> {
    let b = s.as_bytes();
    if b.len() < 5 || !b.iter().take(4).all(u8::is_ascii_digit) || b.get(4) != Some(&b'-') {
        return None;
    }
    parse_layout(b, Layout::DateTimeZone(b'T'))
        .or_else(|| parse_layout(b, Layout::DateTimeZone(b't')))
        .or_else(|| parse_layout(b, Layout::DateSpaceTime))
        .or_else(|| parse_layout(b, Layout::Date))
}

#[derive(Clone, Copy)]
pub(super) enum Layout {
    DateTimeZone(u8),
    DateSpaceTime,
    Date,
}

/// Go's `getnum`: one or two digits.
pub(super) fn getnum(b: &[u8], i: &mut usize) -> Option<u32> {
    let d0 = *b.get(*i).filter(|c| c.is_ascii_digit())?;
    *i += 1;
    let mut n = u32::from(d0 - b'0');
    if let Some(&d1) = b.get(*i).filter(|c| c.is_ascii_digit()) {
        *i += 1;
        n = n * 10 + u32::from(d1 - b'0');
    }
    Some(n)
}

pub(super) fn expect(b: &[u8], i: &mut usize, c: u8) -> Option<()> {
    if b.get(*i) == Some(&c) {
        *i += 1;
        Some(())
    } else {
        None
    }
}

pub(super) fn parse_layout(b: &[u8], layout: Layout) -> Option<GoTime> {
    let mut i = 0;
    let year_digits = b.get(0..4)?;
    let year = year_digits
        .iter()
        .fold(0i32, |acc, &d| acc * 10 + i32::from(d - b'0'));
    i += 4;
    expect(b, &mut i, b'-')?;
    let month = getnum(b, &mut i)?;
    if !(1..=12).contains(&month) {
        return None;
    }
    expect(b, &mut i, b'-')?;
    let day = getnum(b, &mut i)?;
    let mut t = GoTime {
        year,
        month,
        day,
        hour: 0,
        min: 0,
        sec: 0,
        nsec: 0,
        zone: Zone::Utc,
    };
    match layout {
        Layout::Date => {}
        Layout::DateTimeZone(sep) => {
            expect(b, &mut i, sep)?;
            parse_clock(b, &mut i, &mut t)?;
            if b.get(i) == Some(&b'Z') {
                i += 1;
            } else {
                // `Z07:00`: a sign, two digits, `:`, two digits.
                let z = b.get(i..i + 6)?;
                let sign = match z.first() {
                    Some(b'+') => 1,
                    Some(b'-') => -1,
                    _ => return None,
                };
                let two = |x: &[u8]| -> Option<i32> {
                    match x {
                        [a, c] if a.is_ascii_digit() && c.is_ascii_digit() => {
                            Some(i32::from(a - b'0') * 10 + i32::from(c - b'0'))
                        }
                        _ => None,
                    }
                };
                if z.get(3) != Some(&b':') {
                    return None;
                }
                let hh = two(z.get(1..3)?)?;
                let mm = two(z.get(4..6)?)?;
                if hh > 24 || mm > 60 {
                    return None;
                }
                t.zone = Zone::Offset(sign * (hh * 3600 + mm * 60));
                i += 6;
            }
        }
        Layout::DateSpaceTime => {
            // A space in a Go layout matches any run of spaces (at least one).
            if b.get(i) != Some(&b' ') {
                return None;
            }
            while b.get(i) == Some(&b' ') {
                i += 1;
            }
            parse_clock(b, &mut i, &mut t)?;
        }
    }
    if i != b.len() {
        return None;
    }
    if t.day < 1 || t.day > days_in(t.month, t.year) {
        return None;
    }
    Some(t)
}

/// `15:4:5` plus an optional `.999999999` fraction (`,` works too).
pub(super) fn parse_clock(b: &[u8], i: &mut usize, t: &mut GoTime) -> Option<()> {
    t.hour = getnum(b, i)?;
    if t.hour >= 24 {
        return None;
    }
    expect(b, i, b':')?;
    t.min = getnum(b, i)?;
    if t.min >= 60 {
        return None;
    }
    expect(b, i, b':')?;
    t.sec = getnum(b, i)?;
    if t.sec >= 60 {
        return None;
    }
    if matches!(b.get(*i), Some(b'.' | b',')) && b.get(*i + 1).is_some_and(u8::is_ascii_digit) {
        *i += 1;
        let mut ns: u32 = 0;
        let mut n = 0;
        while let Some(&d) = b.get(*i).filter(|c| c.is_ascii_digit()) {
            if n < 9 {
                ns = ns * 10 + u32::from(d - b'0');
                n += 1;
            }
            *i += 1;
        }
        for _ in n..9 {
            ns *= 10;
        }
        t.nsec = ns;
    }
    Some(())
}

pub(super) fn days_in(month: u32, year: i32) -> u32 {
    match month {
        2 if (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

impl GoTime {
    pub(super) fn offset_secs(&self) -> i32 {
        match self.zone {
            Zone::Utc => 0,
            Zone::Offset(o) => o,
        }
    }

    /// `time.Time.MarshalJSON`: RFC 3339 with trimmed nanoseconds, or the
    /// error Go reports for offsets of 24 hours or more.
    pub(super) fn rfc3339(&self) -> Result<String, &'static str> {
        let mut s = format!(
            "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}",
            self.year, self.month, self.day, self.hour, self.min, self.sec
        );
        if self.nsec != 0 {
            let frac = format!("{:09}", self.nsec);
            s.push('.');
            s.push_str(frac.trim_end_matches('0'));
        }
        let off = self.offset_secs();
        if off == 0 {
            s.push('Z');
        } else {
            let mins = off.abs() / 60;
            if mins / 60 >= 24 {
                return Err("Time.MarshalJSON: timezone hour outside of range [0,23]");
            }
            let sign = if off < 0 { '-' } else { '+' };
            let _ = write!(s, "{sign}{:02}:{:02}", mins / 60, mins % 60);
        }
        Ok(s)
    }

    /// Seconds since year 1 of the instant (Go's `ext` field), for ordering.
    pub(super) fn abs_secs(&self) -> i64 {
        let y = i64::from(self.year) - 1;
        let mut days = y * 365 + y / 4 - y / 100 + y / 400;
        for m in 1..self.month {
            days += i64::from(days_in(m, self.year));
        }
        days += i64::from(self.day) - 1;
        days * 86_400 + i64::from(self.hour) * 3600 + i64::from(self.min) * 60 + i64::from(self.sec)
            - i64::from(self.offset_secs())
    }

    /// `time.Time.GoString`.
    pub(super) fn go_string(&self, out: &mut String) {
        const MONTHS: [&str; 12] = [
            "January",
            "February",
            "March",
            "April",
            "May",
            "June",
            "July",
            "August",
            "September",
            "October",
            "November",
            "December",
        ];
        let month = usize::try_from(self.month)
            .ok()
            .and_then(|m| m.checked_sub(1))
            .and_then(|m| MONTHS.get(m))
            .copied()
            .unwrap_or("January");
        let loc = match self.zone {
            Zone::Utc => "time.UTC",
            // kustomize runs with a UTC local zone: a zero offset maps to Local.
            Zone::Offset(0) => "time.Local",
            Zone::Offset(_) => "time.Location(\"\")",
        };
        let _ = write!(
            out,
            "time.Date({}, time.{}, {}, {}, {}, {}, {}, {})",
            self.year, month, self.day, self.hour, self.min, self.sec, self.nsec, loc
        );
    }
}
