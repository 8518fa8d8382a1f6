package view

import (
	"fmt"
	"os"
	"syscall"
	"testing"
	"unsafe"
)

// openPTY opens a pseudo-terminal and returns its terminal end, or skips the test when the
// system has none to give.
func openPTY(t *testing.T) *os.File {
	t.Helper()
	ptm, err := os.OpenFile("/dev/ptmx", os.O_RDWR, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals: %v", err)
	}
	t.Cleanup(func() { ptm.Close() })
	var unlock int32
	var n uint32
	if _, _, errno := syscall.Syscall(syscall.SYS_IOCTL, ptm.Fd(), syscall.TIOCSPTLCK, uintptr(unsafe.Pointer(&unlock))); errno != 0 {
		t.Skipf("unlocking the pseudo-terminal: %v", errno)
	}
	if _, _, errno := syscall.Syscall(syscall.SYS_IOCTL, ptm.Fd(), syscall.TIOCGPTN, uintptr(unsafe.Pointer(&n))); errno != 0 {
		t.Skipf("numbering the pseudo-terminal: %v", errno)
	}
	pts, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("opening the pseudo-terminal: %v", err)
	}
	t.Cleanup(func() { pts.Close() })
	return pts
}

func TestViewEnableKeys(t *testing.T) {
	pts := openPTY(t)
	if !IsTerminal(pts) {
		t.Fatal("IsTerminal: false for a pseudo-terminal")
	}
	mode := func() syscall.Termios {
		t.Helper()
		var m syscall.Termios
		if err := termios(pts, ioctlGetTermios, &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	before := mode()
	if before.Lflag&syscall.ICANON == 0 || before.Lflag&syscall.ECHO == 0 {
		t.Fatalf("a new terminal is not line by line with echo: lflag %#x", before.Lflag)
	}
	restore, err := EnableKeys(pts)
	if err != nil {
		t.Fatal(err)
	}
	keys := mode()
	if keys.Lflag&(syscall.ICANON|syscall.ECHO) != 0 || keys.Lflag&syscall.ISIG == 0 || keys.Cc[syscall.VMIN] != 1 {
		t.Errorf("keys mode: lflag %#x, VMIN %d; want ICANON and ECHO off, ISIG on, VMIN 1", keys.Lflag, keys.Cc[syscall.VMIN])
	}
	if err := restore(); err != nil {
		t.Fatal(err)
	}
	if after := mode(); after != before {
		t.Errorf("restore left %+v, want %+v", after, before)
	}

	f, err := os.CreateTemp(t.TempDir(), "not-a-terminal")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := EnableKeys(f); err == nil {
		t.Error("EnableKeys on a file: no error")
	}
}
