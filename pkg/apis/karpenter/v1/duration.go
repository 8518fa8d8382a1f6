package v1

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"time"
)

// Never is the literal that NillableDuration accepts for "no duration".
const Never = "Never"

// NillableDuration is a duration that may also be "Never" (Duration nil). It keeps the text it
// was read from, so "1h" is written back as "1h" rather than "1h0m0s". The zero value means
// unset; NeverDuration returns "Never".
//
// +kubebuilder:validation:Type=string
type NillableDuration struct {
	*time.Duration
	// Raw is the text the duration was read from; it is not serialized on its own.
	Raw []byte `json:"-"`
}

// MustParseNillableDuration parses "Never" or a Go duration and panics on error. For tests and
// constants only.
func MustParseNillableDuration(s string) NillableDuration {
	var d NillableDuration
	if err := d.UnmarshalJSON([]byte(`"` + s + `"`)); err != nil {
		panic(err)
	}
	return d
}

// NewNillableDuration returns a NillableDuration holding d.
func NewNillableDuration(d time.Duration) NillableDuration {
	return NillableDuration{Duration: &d}
}

// NeverDuration returns the "Never" duration. Use it rather than a zero NillableDuration, which
// means "unset" and is omitted when written, so that the API server's default applies.
func NeverDuration() NillableDuration {
	return NillableDuration{Raw: []byte(`"` + Never + `"`)}
}

// IsZero reports whether the duration is unset (neither read nor given a value).
func (d NillableDuration) IsZero() bool { return d.Duration == nil && d.Raw == nil }

// IsNever reports whether the duration is "Never".
func (d NillableDuration) IsNever() bool { return d.Duration == nil }

// UnmarshalJSON reads "Never" or a Go duration string.
func (d *NillableDuration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("duration must be a string such as \"30s\", \"720h\" or \"Never\": %w", err)
	}
	d.Raw = append([]byte(nil), b...)
	if s == Never {
		d.Duration = nil
		return nil
	}
	parsed, err := time.ParseDuration(s)
	if err != nil {
		return &DurationError{Value: s, Never: true}
	}
	d.Duration = &parsed
	return nil
}

// MarshalJSON writes the text the duration was read from while it still means the same
// duration, or else its canonical form.
func (d NillableDuration) MarshalJSON() ([]byte, error) {
	if d.Raw != nil {
		var read NillableDuration
		if read.UnmarshalJSON(d.Raw) == nil && sameDuration(read.Duration, d.Duration) {
			return d.Raw, nil
		}
	}
	if d.Duration == nil {
		return json.Marshal(Never)
	}
	return json.Marshal(d.Duration.String())
}

// String returns "Never" or the duration.
func (d NillableDuration) String() string {
	if d.Duration == nil {
		return Never
	}
	return d.Duration.String()
}

func sameDuration(a, b *time.Duration) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

// DurationError is the error for text that is not a duration: it says what is accepted and,
// when the decoder knows it (see NameDurationField), which field held the text.
//
// +kubebuilder:object:generate=false
type DurationError struct {
	// Field is the field's path, such as spec.disruption.consolidateAfter; empty if unknown.
	Field string
	// Value is the text that is not a duration.
	Value string
	// Never is whether the field also takes "Never" (a NillableDuration).
	Never bool
}

// Error names the field when known, the text, and what to write instead.
func (e *DurationError) Error() string {
	accepted := "a Go duration such as 30s, 5m or 720h (units h, m, s, ms; no days)"
	if e.Never {
		accepted += ", or " + Never
	}
	msg := fmt.Sprintf("%q is not a duration: write %s", e.Value, accepted)
	if e.Field != "" {
		msg = e.Field + ": " + msg
	}
	return msg
}

// timeError matches time.ParseDuration's errors (which metav1.Duration returns as they are):
// the last quoted text is the input.
var timeError = regexp.MustCompile(`^time: [a-z ]*(?:"[^"]*" in )?duration (".*")$`)

// NameDurationField returns err as a DurationError naming the field, when err is (or wraps) a
// duration that did not parse, either a NillableDuration's or a metav1.Duration's, and the
// document being decoded, raw, holds that text at exactly one path (such as
// spec.template.spec.expireAfter). A DurationError whose text appears at no path or several is
// returned without a field; any other error is returned as it is.
func NameDurationField(err error, raw map[string]any) error {
	var bad *DurationError
	if !errors.As(err, &bad) {
		inner := err
		for next := errors.Unwrap(inner); next != nil; next = errors.Unwrap(inner) {
			inner = next
		}
		if inner == nil {
			return err
		}
		m := timeError.FindStringSubmatch(inner.Error())
		if m == nil {
			return err
		}
		value, uerr := strconv.Unquote(m[1])
		if uerr != nil {
			return err
		}
		bad = &DurationError{Value: value}
	}
	named := *bad
	var paths []string
	findString(raw, "", named.Value, &paths)
	if len(paths) == 1 {
		named.Field = paths[0]
	}
	return &named
}

// findString appends the paths at which v holds the string s.
func findString(v any, path, s string, paths *[]string) {
	switch v := v.(type) {
	case string:
		if v == s {
			*paths = append(*paths, path)
		}
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			child := k
			if path != "" {
				child = path + "." + k
			}
			findString(v[k], child, s, paths)
		}
	case []any:
		for i, item := range v {
			findString(item, fmt.Sprintf("%s[%d]", path, i), s, paths)
		}
	}
}
