package convert

import (
	"fmt"
	"strings"
)

// Errors is every problem a converter found in its input. Converters return all of them at
// once, and no output, so that one run shows everything to fix.
type Errors []error

// Error lists the problems, one a line.
func (e Errors) Error() string {
	switch len(e) {
	case 0:
		return "no errors"
	case 1:
		return e[0].Error()
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d errors:", len(e))
	for _, err := range e {
		b.WriteString("\n  ")
		b.WriteString(strings.ReplaceAll(err.Error(), "\n", "\n    "))
	}
	return b.String()
}

// Unwrap returns the problems, for errors.Is and errors.As.
func (e Errors) Unwrap() []error { return e }

// Lines returns each problem's text, in order.
func (e Errors) Lines() []string {
	lines := make([]string, len(e))
	for i, err := range e {
		lines[i] = err.Error()
	}
	return lines
}

// AsErrors returns the problems of err: its list when it is an Errors, else err alone.
func AsErrors(err error) Errors {
	if list, ok := err.(Errors); ok {
		return list
	}
	return Errors{err}
}
