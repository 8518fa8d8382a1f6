package userdata

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/mail"
	"net/textproto"
	"strings"
)

// MIMEBoundary is the boundary of the MIME multi-part documents rendered for AL2023 and AL2
// (the one Karpenter uses). It is fixed so the output is deterministic; only when a part's body
// contains the delimiter is a boundary derived from the parts' contents used instead.
const MIMEBoundary = "//"

// Content types of the parts the AL2023 and AL2 documents are made of.
const (
	contentTypeNodeConfig  = "application/node.eks.aws"
	contentTypeShellScript = `text/x-shellscript; charset="us-ascii"`
	contentTypeCloudConfig = `text/cloud-config; charset="us-ascii"`
)

// part is one part of a MIME multi-part document: its headers and its raw (undecoded) body.
type part struct {
	header textproto.MIMEHeader
	body   []byte
}

// newPart returns a part with just a Content-Type header.
func newPart(contentType string, body []byte) part {
	return part{header: textproto.MIMEHeader{"Content-Type": {contentType}}, body: body}
}

// mediaType returns the part's media type, lower-cased and without parameters.
func (p part) mediaType() string {
	mt, _, err := mime.ParseMediaType(p.header.Get("Content-Type"))
	if err != nil {
		return strings.ToLower(strings.TrimSpace(p.header.Get("Content-Type")))
	}
	return mt
}

// looksLikeMIME reports whether user data starts with a MIME header.
func looksLikeMIME(s string) bool {
	first := strings.ToLower(strings.TrimLeft(s, " \t\r\n"))
	return strings.HasPrefix(first, "mime-version:") || strings.HasPrefix(first, "content-type:")
}

// parseMIME splits a MIME document into its parts, keeping each part's headers and raw body.
// A single-part (non-multipart) document yields one part.
func parseMIME(s string) ([]part, error) {
	msg, err := mail.ReadMessage(strings.NewReader(strings.TrimLeft(s, " \t\r\n")))
	if err != nil {
		return nil, userDataErr("looks like a MIME document but its headers do not parse: %v", err)
	}
	ct := msg.Header.Get("Content-Type")
	if ct == "" {
		return nil, userDataErr("MIME document has no Content-Type header")
	}
	mediaType, params, err := mime.ParseMediaType(ct)
	if err != nil {
		return nil, userDataErr("MIME Content-Type %q does not parse: %v", ct, err)
	}
	if !strings.HasPrefix(mediaType, "multipart/") {
		body, err := io.ReadAll(msg.Body)
		if err != nil {
			return nil, userDataErr("reading MIME body: %v", err)
		}
		h := textproto.MIMEHeader{"Content-Type": {ct}}
		for _, k := range []string{"Content-Transfer-Encoding", "Content-Disposition"} {
			if v := msg.Header.Get(k); v != "" {
				h.Set(k, v)
			}
		}
		return []part{{header: h, body: body}}, nil
	}
	boundary := params["boundary"]
	if boundary == "" {
		return nil, userDataErr("MIME Content-Type %q has no boundary parameter", ct)
	}
	r := multipart.NewReader(msg.Body, boundary)
	var parts []part
	for i := 1; ; i++ {
		p, err := r.NextRawPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, userDataErr("MIME part %d does not parse (boundary %q): %v", i, boundary, err)
		}
		body, err := io.ReadAll(p)
		if err != nil {
			return nil, userDataErr("MIME part %d does not parse (boundary %q): %v", i, boundary, err)
		}
		h := textproto.MIMEHeader{}
		for k, v := range p.Header {
			h[k] = append([]string(nil), v...)
		}
		if h.Get("Content-Type") == "" {
			// RFC 2046: a part without Content-Type is text/plain.
			h.Set("Content-Type", `text/plain; charset="us-ascii"`)
		}
		parts = append(parts, part{header: h, body: body})
	}
	if len(parts) == 0 {
		return nil, userDataErr("MIME multi-part document has no parts (boundary %q)", boundary)
	}
	return parts, nil
}

// writeMIME renders parts as a multipart/mixed document, in order.
func writeMIME(parts []part) (string, error) {
	boundary := chooseBoundary(parts)
	var buf bytes.Buffer
	fmt.Fprintf(&buf, "MIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=%q\r\n\r\n", boundary)
	w := multipart.NewWriter(&buf)
	if err := w.SetBoundary(boundary); err != nil {
		return "", fmt.Errorf("setting MIME boundary: %w", err)
	}
	for _, p := range parts {
		pw, err := w.CreatePart(p.header)
		if err != nil {
			return "", fmt.Errorf("writing MIME part: %w", err)
		}
		if _, err := pw.Write(p.body); err != nil {
			return "", fmt.Errorf("writing MIME part: %w", err)
		}
	}
	if err := w.Close(); err != nil {
		return "", fmt.Errorf("closing MIME document: %w", err)
	}
	return buf.String(), nil
}

// chooseBoundary returns MIMEBoundary unless a body contains its delimiter, then one derived
// from the bodies (still deterministic).
func chooseBoundary(parts []part) string {
	clash := func(b string) bool {
		for _, p := range parts {
			if bytes.Contains(p.body, []byte("--"+b)) {
				return true
			}
		}
		return false
	}
	if !clash(MIMEBoundary) {
		return MIMEBoundary
	}
	h := sha256.New()
	for _, p := range parts {
		h.Write(p.body)
	}
	sum := hex.EncodeToString(h.Sum(nil))
	for n := 16; ; n += 8 {
		b := "==KARPENTER-" + sum[:min(n, len(sum))] + "=="
		if !clash(b) || n >= len(sum) {
			return b
		}
	}
}
