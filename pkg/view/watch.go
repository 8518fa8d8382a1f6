package view

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/openkarpenter/karpenter/pkg/scheduling"
)

// DefaultInterval is how often Watch redraws when WatchOptions does not say.
const DefaultInterval = time.Second

// ANSI escape sequences that move the cursor and erase the screen.
const (
	hideCursor  = "\x1b[?25l"
	showCursor  = "\x1b[?25h"
	cursorHome  = "\x1b[H"
	clearScreen = "\x1b[2J"
	eraseLine   = "\x1b[K" // to the end of the line
	eraseBelow  = "\x1b[J" // from the cursor to the end of the screen
)

// WatchOptions configure Watch. The zero value redraws every DefaultInterval, in plain text,
// with no limit on the frame's height.
type WatchOptions struct {
	// Snapshot builds each frame; its Now is set to the frame's time, and its Requests to a
	// cache kept across frames when nil.
	Snapshot Options
	// Render draws each frame; its Width and Height are set from Size.
	Render RenderOptions
	// Interval is the time between frames; zero means DefaultInterval.
	Interval time.Duration
	// Size, when set, returns the terminal's width and height in cells before each frame, and
	// false when they are not known.
	Size func() (width, height int, ok bool)
	// Now returns the frame's time; nil means time.Now.
	Now func() time.Time
}

// Once reads src, builds one snapshot at opts.Now and writes it to w, with no cursor control:
// for a pipe, a file or a single look.
func Once(ctx context.Context, src Source, w io.Writer, opts Options, render RenderOptions) error {
	objs, err := src.Read(ctx)
	if err != nil {
		return err
	}
	return Render(w, NewSnapshot(objs, opts), render)
}

// Watch draws a frame from src every Interval on the terminal w, in place, until ctx ends; it
// then returns nil. It hides the cursor while it runs and shows it again however it returns. A
// frame whose objects cannot be read shows the error instead, and the next frame tries again.
// It returns early only when w fails.
func Watch(ctx context.Context, src Source, w io.Writer, opts WatchOptions) (err error) {
	if opts.Interval <= 0 {
		opts.Interval = DefaultInterval
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Snapshot.Requests == nil {
		opts.Snapshot.Requests = &scheduling.RequestsCache{}
	}
	if _, err := io.WriteString(w, hideCursor+cursorHome+clearScreen); err != nil {
		return err
	}
	defer func() {
		_, showErr := io.WriteString(w, showCursor)
		err = errors.Join(err, showErr)
	}()
	ticker := time.NewTicker(opts.Interval)
	defer ticker.Stop()
	for {
		if err := drawFrame(ctx, src, w, &opts); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C:
		}
	}
}

// drawFrame reads, builds and draws one frame over the previous one.
func drawFrame(ctx context.Context, src Source, w io.Writer, opts *WatchOptions) error {
	var frame strings.Builder
	objs, err := src.Read(ctx)
	switch {
	case ctx.Err() != nil:
		return nil // stopping: keep the last frame on the screen
	case err != nil:
		fmt.Fprintf(&frame, "error: %v\n(retrying every %s)\n", err, opts.Interval)
	default:
		opts.Snapshot.Now = opts.Now()
		s := NewSnapshot(objs, opts.Snapshot)
		opts.Snapshot.Requests.Prune()
		render := opts.Render
		if opts.Size != nil {
			if w, h, ok := opts.Size(); ok {
				// A newline on the last line would scroll the screen: keep it free.
				render.Width, render.Height = w, max(h-1, 1)
			}
		}
		if err := Render(&frame, s, render); err != nil {
			return err
		}
	}
	// Overwrite the previous frame line by line and erase what is left of it, rather than
	// clearing the screen first, so that the terminal does not flicker.
	out := cursorHome + strings.ReplaceAll(frame.String(), "\n", eraseLine+"\n") + eraseBelow
	_, err = io.WriteString(w, out)
	return err
}
