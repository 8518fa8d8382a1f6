package disruption

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Schedule is a parsed five-field cron expression (minute hour day-of-month month
// day-of-week), read in UTC. Fields take *, numbers, names (jan-dec, sun-sat), ranges a-b,
// steps */n and a-b/n, and comma lists; day-of-week 7 is Sunday. When both day fields are
// restricted, a day matches either, as in cron. The macros @yearly, @annually, @monthly,
// @weekly, @daily, @midnight and @hourly are accepted.
type Schedule struct {
	minute, hour, dom, month, dow uint64
	domAny, dowAny                bool
}

var cronMacros = map[string]string{
	"@yearly":   "0 0 1 1 *",
	"@annually": "0 0 1 1 *",
	"@monthly":  "0 0 1 * *",
	"@weekly":   "0 0 * * 0",
	"@daily":    "0 0 * * *",
	"@midnight": "0 0 * * *",
	"@hourly":   "0 * * * *",
}

var (
	monthNames = map[string]int{"jan": 1, "feb": 2, "mar": 3, "apr": 4, "may": 5, "jun": 6, "jul": 7, "aug": 8, "sep": 9, "oct": 10, "nov": 11, "dec": 12}
	dayNames   = map[string]int{"sun": 0, "mon": 1, "tue": 2, "wed": 3, "thu": 4, "fri": 5, "sat": 6}
)

// ParseSchedule parses a cron expression; see Schedule.
func ParseSchedule(expr string) (*Schedule, error) {
	expr = strings.TrimSpace(expr)
	if m, ok := cronMacros[strings.ToLower(expr)]; ok {
		expr = m
	}
	fields := strings.Fields(expr)
	if len(fields) != 5 {
		return nil, fmt.Errorf("cron expression %q: want 5 fields, have %d", expr, len(fields))
	}
	s := &Schedule{}
	specs := []struct {
		name     string
		lo, hi   int
		names    map[string]int
		bits     *uint64
		anyField *bool
	}{
		{"minute", 0, 59, nil, &s.minute, nil},
		{"hour", 0, 23, nil, &s.hour, nil},
		{"day of month", 1, 31, nil, &s.dom, &s.domAny},
		{"month", 1, 12, monthNames, &s.month, nil},
		{"day of week", 0, 7, dayNames, &s.dow, &s.dowAny},
	}
	for i, spec := range specs {
		bits, star, err := parseField(fields[i], spec.lo, spec.hi, spec.names)
		if err != nil {
			return nil, fmt.Errorf("cron expression %q: %s: %w", expr, spec.name, err)
		}
		*spec.bits = bits
		if spec.anyField != nil {
			*spec.anyField = star
		}
	}
	if s.dow&(1<<7) != 0 { // 7 is Sunday too
		s.dow |= 1
	}
	return s, nil
}

// parseField returns the field's values as bits and whether it is an unrestricted "*".
func parseField(field string, lo, hi int, names map[string]int) (uint64, bool, error) {
	var bits uint64
	star := field == "*" || field == "?"
	for _, item := range strings.Split(field, ",") {
		rng, stepText, hasStep := strings.Cut(item, "/")
		step := 1
		if hasStep {
			n, err := strconv.Atoi(stepText)
			if err != nil || n <= 0 {
				return 0, false, fmt.Errorf("invalid step %q", stepText)
			}
			step = n
		}
		first, last := lo, hi
		switch {
		case rng == "*" || rng == "?":
		case strings.Contains(rng, "-"):
			a, b, _ := strings.Cut(rng, "-")
			var err error
			if first, err = fieldValue(a, lo, hi, names); err != nil {
				return 0, false, err
			}
			if last, err = fieldValue(b, lo, hi, names); err != nil {
				return 0, false, err
			}
			if first > last {
				return 0, false, fmt.Errorf("range %q is backwards", rng)
			}
		default:
			v, err := fieldValue(rng, lo, hi, names)
			if err != nil {
				return 0, false, err
			}
			first = v
			if !hasStep {
				last = v
			}
		}
		for v := first; v <= last; v += step {
			bits |= 1 << uint(v)
		}
	}
	return bits, star, nil
}

func fieldValue(text string, lo, hi int, names map[string]int) (int, error) {
	if v, ok := names[strings.ToLower(text)]; ok {
		return v, nil
	}
	v, err := strconv.Atoi(text)
	if err != nil {
		return 0, fmt.Errorf("invalid value %q", text)
	}
	if v < lo || v > hi {
		return 0, fmt.Errorf("value %d out of range [%d, %d]", v, lo, hi)
	}
	return v, nil
}

func (s *Schedule) dayMatches(t time.Time) bool {
	dom := s.dom&(1<<uint(t.Day())) != 0
	dow := s.dow&(1<<uint(t.Weekday())) != 0
	switch {
	case s.domAny && s.dowAny:
		return true
	case s.domAny:
		return dow
	case s.dowAny:
		return dom
	default:
		return dom || dow
	}
}

// Matches reports whether the schedule fires at t's minute (UTC).
func (s *Schedule) Matches(t time.Time) bool {
	t = t.UTC()
	return s.month&(1<<uint(t.Month())) != 0 && s.dayMatches(t) &&
		s.hour&(1<<uint(t.Hour())) != 0 && s.minute&(1<<uint(t.Minute())) != 0
}

// Prev returns the latest firing at or before t and after t-within, if there is one. It skips
// whole months, days and hours that cannot match, so long windows stay cheap.
func (s *Schedule) Prev(t time.Time, within time.Duration) (time.Time, bool) {
	t = t.UTC()
	floor := t.Add(-within)
	cur := t.Truncate(time.Minute)
	for cur.After(floor) {
		switch {
		case s.month&(1<<uint(cur.Month())) == 0:
			cur = time.Date(cur.Year(), cur.Month(), 1, 0, 0, 0, 0, time.UTC).Add(-time.Minute)
		case !s.dayMatches(cur):
			cur = time.Date(cur.Year(), cur.Month(), cur.Day(), 0, 0, 0, 0, time.UTC).Add(-time.Minute)
		case s.hour&(1<<uint(cur.Hour())) == 0:
			cur = cur.Truncate(time.Hour).Add(-time.Minute)
		case s.minute&(1<<uint(cur.Minute())) == 0:
			cur = cur.Add(-time.Minute)
		default:
			return cur, true
		}
	}
	return time.Time{}, false
}

// Next returns the earliest firing after t and at most within after it, if there is one. Like
// Prev, it skips whole months, days and hours that cannot match.
func (s *Schedule) Next(t time.Time, within time.Duration) (time.Time, bool) {
	t = t.UTC()
	ceiling := t.Add(within)
	cur := t.Truncate(time.Minute).Add(time.Minute)
	for !cur.After(ceiling) {
		switch {
		case s.month&(1<<uint(cur.Month())) == 0:
			cur = time.Date(cur.Year(), cur.Month(), 1, 0, 0, 0, 0, time.UTC).AddDate(0, 1, 0)
		case !s.dayMatches(cur):
			cur = time.Date(cur.Year(), cur.Month(), cur.Day(), 0, 0, 0, 0, time.UTC).AddDate(0, 0, 1)
		case s.hour&(1<<uint(cur.Hour())) == 0:
			cur = cur.Truncate(time.Hour).Add(time.Hour)
		case s.minute&(1<<uint(cur.Minute())) == 0:
			cur = cur.Add(time.Minute)
		default:
			return cur, true
		}
	}
	return time.Time{}, false
}

// ActiveAt reports whether a window of duration that opens at each firing contains now: some
// firing f has f <= now < f+duration.
func (s *Schedule) ActiveAt(now time.Time, duration time.Duration) bool {
	if duration <= 0 {
		return false
	}
	_, ok := s.Prev(now, duration)
	return ok
}
