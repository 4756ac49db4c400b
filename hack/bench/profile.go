package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// profile is a pprof profile of the manager and its top functions.
type profile struct {
	// what says when it was taken; path is where it is saved.
	what, path string
	// top is `go tool pprof -top` of it, trimmed.
	top string
}

// fetchProfile saves the manager's profile name (heap, profile, ...) with
// the query query into dir, and summarises it with `go tool pprof -top`
// for sampleIndex (empty: the profile's default).
func fetchProfile(ctx context.Context, baseURL, name, query, dir, file, sampleIndex, what string) (profile, error) {
	u := strings.TrimSuffix(baseURL, "/") + "/" + name
	if query != "" {
		u += "?" + query
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	resp, err := getOK(ctx, http.DefaultClient, u, "", "fetching")
	if err != nil {
		return profile{}, err
	}
	defer func() { _ = resp.Body.Close() }()
	path := filepath.Join(dir, file)
	f, err := os.Create(path)
	if err != nil {
		return profile{}, err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		_ = f.Close()
		return profile{}, err
	}
	if err := f.Close(); err != nil {
		return profile{}, err
	}
	args := []string{"tool", "pprof", "-top", "-nodecount=15"}
	if sampleIndex != "" {
		args = append(args, "-sample_index="+sampleIndex)
	}
	out, err := exec.CommandContext(ctx, "go", append(args, path)...).CombinedOutput()
	if err != nil {
		return profile{}, fmt.Errorf("go tool pprof %s: %w: %s", path, err, out)
	}
	return profile{what: what, path: path, top: string(out)}, nil
}

// markdown renders p for the report: what it is, its file's name, and
// its top functions as a code block.
func (p profile) markdown() string {
	return fmt.Sprintf("\nProfile: %s (`%s`, `go tool pprof -top`):\n\n```\n%s```\n", p.what, filepath.Base(p.path), p.top)
}
