package view

import (
	"bytes"
	"context"
	"errors"
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
		if !strings.Contains(f, "Cost     $0.700/hour") || !strings.Contains(f, "… 7 more rows") {
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
