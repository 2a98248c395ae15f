package raftfsm

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/heddlewf/heddle/engine"
)

// A backup of a sharded cluster (docs/operations.md, "Backing up a sharded
// cluster") is a directory: one file per shard, each the shard's state in
// storage's snapshot format as of one moment on its leader, and a manifest
// written last that lists them with their sizes and checksums. The copies
// are taken while every shard holds its deliveries (hold.go), which makes
// them one consistent cut of the cross-shard state whatever moment each
// was taken at; the backup releases the holds when done, and only a backup
// whose holds all lasted to their release gets a manifest.

// BackupFormat is the version of the manifest this code writes and reads.
const BackupFormat = 1

// ManifestFile is the name of a backup's manifest in its directory.
const ManifestFile = "MANIFEST.json"

// maxManifestBytes bounds a manifest: 4096 shards of about 250 bytes each,
// with room to spare.
const maxManifestBytes = 4 << 20

// DefaultHoldTTL is how long a backup holds deliveries when
// BackupOptions.HoldTTL is 0: the shards' leaders release the hold past it
// even if the backup died.
const DefaultHoldTTL = 10 * time.Minute

// BackupManifest describes a backup directory.
type BackupManifest struct {
	Format int `json:"format"`
	// Token is the delivery hold the copies were taken under.
	Token string `json:"token"`
	// Created is when the backup began, Finished when its manifest was
	// written (RFC 3339, UTC).
	Created  string `json:"created"`
	Finished string `json:"finished"`
	// Shards is the cluster's shard count; a restore makes a cluster of
	// as many.
	Shards int `json:"shards"`
	// PlacementVersion and Nodes say, for information, which placement
	// the cluster had when it was backed up.
	PlacementVersion uint64        `json:"placement_version"`
	Nodes            []string      `json:"nodes,omitempty"`
	Files            []BackupShard `json:"files"`
}

// BackupShard is one shard's file in a backup.
type BackupShard struct {
	Shard int    `json:"shard"`
	File  string `json:"file"`
	Bytes int64  `json:"bytes"`
	// SHA256 is the file's checksum, hex.
	SHA256 string `json:"sha256"`
	// AppliedIndex is the shard's Raft log index the copy holds
	// everything up to.
	AppliedIndex uint64 `json:"applied_index"`
	// Taken is when the copy was fixed (RFC 3339, UTC).
	Taken string `json:"taken"`
}

// BackupError details ErrBackup: which file of a backup is unusable, and why.
type BackupError struct {
	File   string // the path of the file
	Reason string
}

func (e *BackupError) Error() string {
	return fmt.Sprintf("raftfsm: backup file %s: %s [%s]", e.File, e.Reason, BackupCode)
}

// Unwrap makes errors.Is match ErrBackup.
func (e *BackupError) Unwrap() error { return ErrBackup }

// Code returns BackupCode.
func (e *BackupError) Code() string { return BackupCode }

// shardFileName is the name of shard k's file in a backup.
func shardFileName(k int) string { return fmt.Sprintf("shard-%04d.snap", k) }

// DecodeManifest parses a manifest's bytes and checks them: the format, a
// shard count in range, one file per shard in order with the name the
// format gives it (never a path), a size and a checksum. It reads at most
// maxManifestBytes.
func DecodeManifest(b []byte) (*BackupManifest, error) {
	if len(b) > maxManifestBytes {
		return nil, fmt.Errorf("%d bytes, more than %d", len(b), maxManifestBytes)
	}
	var m BackupManifest
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("not a manifest: %v", err)
	}
	if dec.More() {
		return nil, errors.New("bytes after the manifest")
	}
	switch {
	case m.Format != BackupFormat:
		return nil, fmt.Errorf("format %d, this heddle reads %d", m.Format, BackupFormat)
	case m.Shards < 1 || m.Shards > engine.MaxShards:
		return nil, fmt.Errorf("%d shards, not in [1, %d]", m.Shards, engine.MaxShards)
	case len(m.Files) != m.Shards:
		return nil, fmt.Errorf("%d files for %d shards", len(m.Files), m.Shards)
	case m.Token == "" || len(m.Token) > maxHoldTokenBytes:
		return nil, fmt.Errorf("a token of %d bytes, not in [1, %d]", len(m.Token), maxHoldTokenBytes)
	case len(m.Nodes) > MaxNodes:
		return nil, fmt.Errorf("%d nodes, more than %d", len(m.Nodes), MaxNodes)
	}
	for k, f := range m.Files {
		switch sum, err := hex.DecodeString(f.SHA256); {
		case f.Shard != k:
			return nil, fmt.Errorf("file %d is of shard %d, want %d", k, f.Shard, k)
		case f.File != shardFileName(k):
			return nil, fmt.Errorf("shard %d's file is named %q, want %q", k, f.File, shardFileName(k))
		case f.Bytes <= 0:
			return nil, fmt.Errorf("shard %d's file has %d bytes", k, f.Bytes)
		case err != nil || len(sum) != sha256.Size:
			return nil, fmt.Errorf("shard %d's checksum %q is not %d hex bytes", k, f.SHA256, sha256.Size)
		case f.AppliedIndex == 0:
			return nil, fmt.Errorf("shard %d's copy holds no applied index", k)
		}
	}
	return &m, nil
}

// ReadBackup reads the manifest of the backup in dir and checks every
// shard's file against it (size and checksum), so that a restore starts
// only from a whole backup. A file that is missing, truncated or changed
// is reported as a *BackupError naming it.
func ReadBackup(dir string) (*BackupManifest, error) {
	path := filepath.Join(dir, ManifestFile)
	f, err := os.Open(path)
	if err != nil {
		return nil, &BackupError{File: path, Reason: fmt.Sprintf("cannot be read (a backup that did not finish has none): %v", err)}
	}
	b, err := io.ReadAll(io.LimitReader(f, maxManifestBytes+1))
	_ = f.Close() // read only
	if err != nil {
		return nil, &BackupError{File: path, Reason: err.Error()}
	}
	m, err := DecodeManifest(b)
	if err != nil {
		return nil, &BackupError{File: path, Reason: err.Error()}
	}
	for _, s := range m.Files {
		if err := checkShardFile(filepath.Join(dir, s.File), s); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// checkShardFile checks one shard file's size and checksum.
func checkShardFile(path string, s BackupShard) error {
	f, err := os.Open(path)
	if err != nil {
		return &BackupError{File: path, Reason: err.Error()}
	}
	defer func() { _ = f.Close() }() // read only
	h := sha256.New()
	n, err := io.Copy(h, f)
	switch {
	case err != nil:
		return &BackupError{File: path, Reason: err.Error()}
	case n != s.Bytes:
		return &BackupError{File: path, Reason: fmt.Sprintf("%d bytes, the manifest says %d (truncated or changed)", n, s.Bytes)}
	case hex.EncodeToString(h.Sum(nil)) != s.SHA256:
		return &BackupError{File: path, Reason: "its checksum differs from the manifest's (the file changed or is damaged)"}
	}
	return nil
}

// BackupSource is a running sharded cluster as a backup sees it:
// httpapi.Client is one (through any node's admin API), and a test may
// speak to Hosts directly. Each shard's calls go to its leader.
type BackupSource interface {
	// ShardMap says how many shards there are, and the placement.
	ShardMap(ctx context.Context) (engine.ShardMap, error)
	// HoldDeliveries holds shard's deliveries for token until ttl from
	// now (Host.HoldDeliveries).
	HoldDeliveries(ctx context.Context, shard int, token, owner string, ttl time.Duration) error
	// ReleaseDeliveries ends the hold; it fails when the shard holds
	// nothing for token.
	ReleaseDeliveries(ctx context.Context, shard int, token string) error
	// CopyShard writes shard's state, which must hold token's hold, to w
	// (Host.OpenShardCopy) and returns the applied index it holds.
	CopyShard(ctx context.Context, shard int, token string, w io.Writer) (uint64, error)
}

// BackupOptions configures Backup. The zero value is valid.
type BackupOptions struct {
	// Owner names who holds the deliveries, as the shards report it (the
	// host and the command, say).
	Owner string
	// HoldTTL bounds how long the deliveries are held; 0 means
	// DefaultHoldTTL. A backup that takes longer fails (its holds expire
	// and are released before it ends), and must be run with more.
	HoldTTL time.Duration
	// Now is the clock of the manifest's times; nil means time.Now.
	Now func() time.Time
}

// Backup backs up the cluster src speaks to into dir, which must not exist
// or be empty: it holds every shard's deliveries, copies each shard on its
// leader, releases the holds and, only when every hold lasted until its
// release, writes the manifest. The holds are released on every path.
func Backup(ctx context.Context, src BackupSource, dir string, opts BackupOptions) (_ *BackupManifest, err error) {
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	ttl := opts.HoldTTL
	if ttl == 0 {
		ttl = DefaultHoldTTL
	}
	if ttl < 0 {
		return nil, fmt.Errorf("%w: a hold of %v", engine.ErrInvalidCommand, ttl)
	}
	if err := emptyDir(dir); err != nil {
		return nil, err
	}
	sm, err := src.ShardMap(ctx)
	if err != nil {
		return nil, fmt.Errorf("raftfsm: backup: reading the shard map: %w", err)
	}
	if sm.Shards < 1 || sm.Shards > engine.MaxShards {
		return nil, fmt.Errorf("raftfsm: backup: the cluster reports %d shards", sm.Shards)
	}
	var nonce [12]byte
	if _, err := rand.Read(nonce[:]); err != nil {
		return nil, err
	}
	m := &BackupManifest{Format: BackupFormat, Token: "backup-" + now().UTC().Format("20060102T150405Z") + "-" + hex.EncodeToString(nonce[:]),
		Created: now().UTC().Format(time.RFC3339Nano), Shards: sm.Shards, PlacementVersion: sm.Version}
	for _, n := range sm.Nodes {
		m.Nodes = append(m.Nodes, n.ID)
	}

	// Every shard is held before any is copied; a shard that was held is
	// released whatever happens next.
	var held []int
	defer func() {
		// The release must run even when ctx is done: a hold left behind
		// stops deliveries until its expiry.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		var errs []error
		for _, k := range held {
			if rerr := src.ReleaseDeliveries(rctx, k, m.Token); rerr != nil {
				errs = append(errs, fmt.Errorf("shard %d: %w", k, rerr))
			}
		}
		if len(errs) > 0 && err == nil {
			// A hold that was gone before its release (its expiry passed)
			// may have let deliveries through during the copies: the
			// copies need not be one cut, and the backup is not one.
			err = fmt.Errorf("raftfsm: backup: releasing the delivery holds (a hold that expired during the copies makes them no consistent cut; "+
				"run the backup again with a longer hold): %w", errors.Join(errs...))
		}
	}()
	for k := range sm.Shards {
		if err := src.HoldDeliveries(ctx, k, m.Token, opts.Owner, ttl); err != nil {
			return nil, fmt.Errorf("raftfsm: backup: holding shard %d's deliveries: %w", k, err)
		}
		held = append(held, k)
	}
	for k := range sm.Shards {
		s, err := copyShard(ctx, src, dir, k, m.Token, now)
		if err != nil {
			return nil, fmt.Errorf("raftfsm: backup: copying shard %d: %w", k, err)
		}
		m.Files = append(m.Files, s)
	}
	// Released here, before the manifest: the deferred release sees none
	// left. A failed release fails the backup.
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	var errs []error
	for _, k := range held {
		if rerr := src.ReleaseDeliveries(rctx, k, m.Token); rerr != nil {
			errs = append(errs, fmt.Errorf("shard %d: %w", k, rerr))
		}
	}
	held = nil
	if len(errs) > 0 {
		return nil, fmt.Errorf("raftfsm: backup: releasing the delivery holds (a hold that expired during the copies makes them no consistent cut; "+
			"run the backup again with a longer hold): %w", errors.Join(errs...))
	}
	m.Finished = now().UTC().Format(time.RFC3339Nano)
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return nil, err
	}
	if err := writeFileSynced(dir, ManifestFile, b); err != nil {
		return nil, fmt.Errorf("raftfsm: backup: writing the manifest: %w", err)
	}
	return m, nil
}

// copyShard copies shard k into its file in dir, synced.
func copyShard(ctx context.Context, src BackupSource, dir string, k int, token string, now func() time.Time) (BackupShard, error) {
	s := BackupShard{Shard: k, File: shardFileName(k), Taken: now().UTC().Format(time.RFC3339Nano)}
	path := filepath.Join(dir, s.File)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return s, err
	}
	h := sha256.New()
	cw := &countWriter{w: io.MultiWriter(f, h)}
	s.AppliedIndex, err = src.CopyShard(ctx, k, token, cw)
	if err == nil {
		err = f.Sync()
	}
	if err = errors.Join(err, f.Close()); err != nil {
		return s, err
	}
	s.Bytes, s.SHA256 = cw.n, hex.EncodeToString(h.Sum(nil))
	return s, nil
}

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// emptyDir makes dir, or checks that it is empty.
func emptyDir(dir string) error {
	entries, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return os.MkdirAll(dir, 0o755)
	case err != nil:
		return err
	case len(entries) > 0:
		return fmt.Errorf("%w: %s is not empty: a backup or a restore goes into a new directory", engine.ErrInvalidCommand, dir)
	}
	return nil
}

// writeFileSynced writes name in dir: a temporary file synced, renamed,
// and the directory synced.
func writeFileSynced(dir, name string, b []byte) error {
	tmp := filepath.Join(dir, name+".tmp")
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if err = errors.Join(err, f.Close()); err != nil {
		return err
	}
	if err := os.Rename(tmp, filepath.Join(dir, name)); err != nil {
		return err
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	return errors.Join(d.Sync(), d.Close())
}
