package view

import (
	"bytes"
	"context"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"
	"time"
)

// sourceFunc adapts a function to Source.
type sourceFunc func(ctx context.Context) (Objects, error)

func (f sourceFunc) Read(ctx context.Context) (Objects, error) { return f(ctx) }

func TestViewWatch(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	reads := 0
	src := sourceFunc(func(ctx context.Context) (Objects, error) {
		reads++
		switch reads {
		case 2:
			return Objects{}, errors.New("connection refused")
		case 4:
			cancel() // Ctrl-C while reading: the frame is not drawn
			return Objects{}, ctx.Err()
		}
		return cluster(), nil
	})
	var out bytes.Buffer
	err := Watch(ctx, src, &out, WatchOptions{
		Snapshot: Options{Prices: testPrices},
		Interval: time.Millisecond,
		Size:     func() (int, int, bool) { return 200, 9, true },
		Now:      func() time.Time { return t0 },
	})
	if err != nil {
		t.Fatalf("Watch: %v", err)
	}
	got := out.String()
	if !strings.HasPrefix(got, hideCursor+cursorHome+clearScreen) {
		t.Errorf("output does not start by hiding the cursor and clearing the screen: %q", got[:min(len(got), 40)])
	}
	if !strings.HasSuffix(got, eraseBelow+showCursor) {
		t.Errorf("output does not end with the last frame and the cursor shown: %q", got[max(len(got)-40, 0):])
	}
	frames := strings.Split(got, cursorHome)[2:]
	if len(frames) != 3 {
		t.Fatalf("%d frames drawn, want 3 (the fourth read was interrupted):\n%q", len(frames), got)
	}
	if !strings.Contains(frames[1], "error: connection refused") || strings.Contains(frames[1], "NAME") {
		t.Errorf("second frame does not show the read error alone:\n%s", frames[1])
	}
	for _, i := range []int{0, 2} {
		f := frames[i]
		if !strings.Contains(f, "Cost     $0.700/hour") || !strings.Contains(f, "rows 1–1 of 8, page 1/8 (a taller terminal shows more)") {
			t.Errorf("frame %d is not the cluster cut to the terminal's height:\n%s", i, f)
		}
		// Each line erases what the previous frame left to its right; the frame erases below it.
		if lines := strings.Count(f, "\n"); lines != 8 || strings.Count(f, eraseLine+"\n") != lines {
			t.Errorf("frame %d: %d lines (want 8, one less than the height), not all ending in erase-line:\n%q", i, lines, f)
		}
	}
}

func TestViewWatchWriteError(t *testing.T) {
	src := sourceFunc(func(context.Context) (Objects, error) { return Objects{}, nil })
	if err := Watch(context.Background(), src, failingWriter{}, WatchOptions{}); err == nil {
		t.Error("Watch did not stop on a failing writer")
	}
}

func TestViewOnce(t *testing.T) {
	src := sourceFunc(func(context.Context) (Objects, error) { return cluster(), nil })
	var out bytes.Buffer
	if err := Once(context.Background(), src, &out, Options{Now: t0, Prices: testPrices}, RenderOptions{}); err != nil {
		t.Fatal(err)
	}
	golden(t, "render-creation.txt", out.String())

	src = sourceFunc(func(context.Context) (Objects, error) { return Objects{}, errors.New("forbidden") })
	if err := Once(context.Background(), src, &out, Options{}, RenderOptions{}); err == nil || err.Error() != "forbidden" {
		t.Errorf("Once error = %v, want the source's", err)
	}
}

// writes passes on each write, as Watch writes a frame at a time.
type writes chan string

func (w writes) Write(p []byte) (int, error) {
	w <- string(p)
	return len(p), nil
}

func TestViewWatchKeys(t *testing.T) {
	reads := 0
	src := sourceFunc(func(context.Context) (Objects, error) {
		reads++
		return cluster(), nil
	})
	keys, typing := io.Pipe()
	out := make(writes, 100)
	done := make(chan error, 1)
	go func() {
		done <- Watch(context.Background(), src, out, WatchOptions{
			Snapshot: Options{Prices: testPrices},
			Interval: time.Hour,                                       // no frame but the first and those keys ask for
			Size:     func() (int, int, bool) { return 200, 9, true }, // a row a page: 8 pages
			Now:      func() time.Time { return t0 },
			Keys:     keys,
		})
	}()
	<-out // hide the cursor and clear the screen
	expect := func(footer string) {
		t.Helper()
		select {
		case f := <-out:
			if !strings.Contains(f, footer+"  ·  ←/→ or PgUp/PgDn: page  ·  q: quit") {
				t.Errorf("frame lacks %q:\n%s", footer, f)
			}
		case err := <-done:
			t.Fatalf("Watch returned %v before the frame with %q", err, footer)
		case <-time.After(10 * time.Second):
			t.Fatalf("no frame with %q", footer)
		}
	}
	expect("rows 1–1 of 8, page 1/8")
	for _, tc := range []struct{ typed, footer string }{
		{"\x1b[C", "rows 2–2 of 8, page 2/8"}, // →
		{"l", "rows 3–3 of 8, page 3/8"},
		{"\x1b[6~", "rows 4–4 of 8, page 4/8"}, // PgDn
		{"G", "rows 8–8 of 8, page 8/8"},
		{" ", "rows 8–8 of 8, page 8/8"},       // past the last: stays there
		{"\x1b[5~", "rows 7–7 of 8, page 7/8"}, // PgUp
		{"\x1bOD", "rows 6–6 of 8, page 6/8"},  // ← in application mode
		{"\x1b[A", ""},                         // ↑: not a page key, no frame
		{"h", "rows 5–5 of 8, page 5/8"},
		{"\x1b[H", "rows 1–1 of 8, page 1/8"},  // Home
		{"\x1b[D", "rows 1–1 of 8, page 1/8"},  // before the first: stays there
		{"\x1b[4~", "rows 8–8 of 8, page 8/8"}, // End
		{"g", "rows 1–1 of 8, page 1/8"},
	} {
		if _, err := typing.Write([]byte(tc.typed)); err != nil {
			t.Fatal(err)
		}
		if tc.footer != "" {
			expect(tc.footer)
		}
	}
	if _, err := typing.Write([]byte("q")); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Watch: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("q did not end Watch")
	}
	if last := <-out; last != showCursor {
		t.Errorf("after q, wrote %q, want the cursor shown", last)
	}
	if reads != 1 {
		t.Errorf("the source was read %d times, want once: turning pages redraws the last frame", reads)
	}
}

// Keys that end leave the view running until its context ends.
func TestViewWatchKeysEnd(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	reads := 0
	src := sourceFunc(func(context.Context) (Objects, error) {
		if reads++; reads == 3 {
			cancel()
		}
		return Objects{}, nil
	})
	if err := Watch(ctx, src, io.Discard, WatchOptions{Interval: time.Millisecond, Keys: strings.NewReader("")}); err != nil {
		t.Fatalf("Watch: %v", err)
	}
	if reads != 3 {
		t.Errorf("%d reads, want 3: the view stopped when its keys ended", reads)
	}
}

func TestViewParseKeys(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []key
	}{
		{"", nil},
		{"l h g G q Q\x03", []key{keyNextPage, keyNextPage, keyPreviousPage, keyNextPage, keyFirstPage, keyNextPage, keyLastPage, keyNextPage, keyQuit, keyNextPage, keyQuit, keyQuit}},
		{"\x1b[C\x1b[D\x1bOC\x1bOD", []key{keyNextPage, keyPreviousPage, keyNextPage, keyPreviousPage}},
		{"\x1b[5~\x1b[6~\x1b[1~\x1b[4~\x1b[7~\x1b[8~\x1bOH\x1bOF", []key{keyPreviousPage, keyNextPage, keyFirstPage, keyLastPage, keyFirstPage, keyLastPage, keyFirstPage, keyLastPage}},
		// Other keys and sequences are skipped whole: F5, Alt+q, ↑, a mouse report-like CSI.
		{"\x1b[15~l\x1bqh\x1b[Ax\x1b[1;5Cg", []key{keyNextPage, keyPreviousPage, keyFirstPage}},
		{"\x1b", nil},
		{"\x1b[", nil},
		{"\x1bO", nil},
	} {
		if got := parseKeys([]byte(tc.in)); !slices.Equal(got, tc.want) {
			t.Errorf("parseKeys(%q) = %v, want %v", tc.in, got, tc.want)
		}
	}
}
