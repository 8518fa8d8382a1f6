package view

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

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
// with no limit on the frame's height and no keys read.
type WatchOptions struct {
	// Snapshot builds each frame; its Now is set to the frame's time, and its Requests and
	// Packing to caches kept across frames when nil.
	Snapshot Options
	// Render draws each frame; its Width and Height are set from Size, its Page from the keys
	// read, and its PageKeys when Keys is set.
	Render RenderOptions
	// Interval is the time between frames; zero means DefaultInterval.
	Interval time.Duration
	// Size, when set, returns the terminal's width and height in cells before each frame, and
	// false when they are not known.
	Size func() (width, height int, ok bool)
	// Now returns the frame's time; nil means time.Now.
	Now func() time.Time
	// Keys, when set, is read for key presses, as a terminal in the mode EnableKeys sets gives
	// them: → l PgDn or space show the next page of rows, ← h or PgUp the previous one, Home
	// or g the first, End or G the last, and q (or Ctrl-C read as a key) ends Watch. A page
	// turned is redrawn at once from the last frame's objects. Watch does not wait for a Read
	// in progress when it returns.
	Keys io.Reader
}

// Once reads src, builds one snapshot at opts.Now and writes it to w, with no cursor control:
// for a pipe, a file or a single look.
func Once(ctx context.Context, src Source, w io.Writer, opts Options, render RenderOptions) error {
	objs, err := src.Read(ctx)
	if err != nil {
		return err
	}
	if err := CheckResources(objs, opts.Resources); err != nil {
		return err
	}
	return Render(w, NewSnapshot(objs, opts), render)
}

// CheckResources refuses resources that no node of objs has allocatable (a misspelt
// nvidia.com/gpu would show empty bars as if none were requested), naming those the nodes
// have. With no node, every resource is accepted.
func CheckResources(objs Objects, resources []corev1.ResourceName) error {
	if len(objs.Nodes) == 0 {
		return nil
	}
	have := map[corev1.ResourceName]bool{}
	for _, n := range objs.Nodes {
		for name := range n.Status.Allocatable {
			have[name] = true
		}
	}
	var missing []string
	for _, r := range resources {
		if !have[r] {
			missing = append(missing, string(r))
		}
	}
	if len(missing) == 0 {
		return nil
	}
	names := make([]string, 0, len(have))
	for name := range have {
		names = append(names, string(name))
	}
	sort.Strings(names)
	return &UnknownResourcesError{Missing: missing, Have: names}
}

// UnknownResourcesError is CheckResources' refusal: the resources asked for that no node has,
// and those the nodes have.
type UnknownResourcesError struct {
	Missing, Have []string
}

func (e *UnknownResourcesError) Error() string {
	return fmt.Sprintf("--resources: no node has %s allocatable (the nodes shown have %s)", strings.Join(e.Missing, ", "), strings.Join(e.Have, ", "))
}

// Watch draws a frame from src every Interval on the terminal w, in place, until ctx ends or q
// is read from opts.Keys; it then returns nil. It hides the cursor while it runs and shows it
// again however it returns. A frame whose objects cannot be read shows the error instead, and
// the next frame tries again. It returns early only when w fails.
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
	if opts.Snapshot.Packing == nil {
		opts.Snapshot.Packing = &PackingCache{}
	}
	var keys <-chan key
	if opts.Keys != nil {
		done := make(chan struct{})
		defer close(done)
		keys = readKeys(opts.Keys, done)
		opts.Render.PageKeys = true
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
	f := &frames{src: src, w: w, opts: &opts}
	for {
		if f.read(ctx) {
			return nil // stopping: keep the last frame on the screen
		}
		if err := f.draw(); err != nil {
			return err
		}
	wait:
		for {
			select {
			case <-ctx.Done():
				return nil
			case <-ticker.C:
				break wait
			case k, ok := <-keys:
				if !ok {
					keys = nil // no more keys: the pages stay as they are
					continue
				}
				if k == keyQuit {
					return nil
				}
				f.turn(k)
				if err := f.draw(); err != nil {
					return err
				}
			}
		}
	}
}

// frames are the frames of a Watch: the last objects read, as a snapshot or an error, and the
// page of rows shown.
type frames struct {
	src  Source
	w    io.Writer
	opts *WatchOptions
	// snapshot is the last frame's, when readErr is nil.
	snapshot Snapshot
	readErr  error
	page     int
}

// read reads the objects and builds the frame's snapshot, or keeps the error. It returns true
// when ctx ended meanwhile.
func (f *frames) read(ctx context.Context) (stopping bool) {
	objs, err := f.src.Read(ctx)
	switch {
	case ctx.Err() != nil:
		return true
	case err != nil:
		f.readErr = err
	default:
		f.readErr = nil
		f.opts.Snapshot.Now = f.opts.Now()
		f.snapshot = NewSnapshot(objs, f.opts.Snapshot)
		f.opts.Snapshot.Requests.Prune()
	}
	return false
}

// turn turns the page as k says; draw keeps it within the pages there are.
func (f *frames) turn(k key) {
	switch k {
	case keyNextPage:
		f.page++
	case keyPreviousPage:
		f.page = max(f.page-1, 0)
	case keyFirstPage:
		f.page = 0
	case keyLastPage:
		f.page = math.MaxInt
	}
}

// draw draws the frame over the previous one.
func (f *frames) draw() error {
	var frame strings.Builder
	if f.readErr != nil {
		fmt.Fprintf(&frame, "error: %v\n(retrying every %s)\n", f.readErr, f.opts.Interval)
	} else {
		render := f.opts.Render
		if f.opts.Size != nil {
			if w, h, ok := f.opts.Size(); ok {
				// A newline on the last line would scroll the screen: keep it free.
				render.Width, render.Height = w, max(h-1, 1)
			}
		}
		f.page = min(f.page, pageCount(&f.snapshot, render.Height)-1)
		render.Page = f.page
		if err := Render(&frame, f.snapshot, render); err != nil {
			return err
		}
	}
	// Overwrite the previous frame line by line and erase what is left of it, rather than
	// clearing the screen first, so that the terminal does not flicker.
	out := cursorHome + strings.ReplaceAll(frame.String(), "\n", eraseLine+"\n") + eraseBelow
	_, err := io.WriteString(f.w, out)
	return err
}
