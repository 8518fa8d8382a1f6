package v1

import (
	"encoding/json"
	"fmt"
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
		return fmt.Errorf("parsing duration %q: %w", s, err)
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
