package storage

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/dgraph-io/badger/v4/pb"
	"github.com/dgraph-io/badger/v4/table"
	"google.golang.org/protobuf/proto"
)

// A repair is an operator's choice to give up what damage made unreadable
// so that the rest opens: Open never repairs on its own. PlanRepair says,
// file by file, what a repair would do and drop; Repair does exactly that
// plan or nothing.
//
//   - A log damaged before its end or cut short is truncated where Badger's
//     replay would stop keeping records: what lies after is dropped, and
//     the plan counts it.
//   - A log header naming an encryption key has the key id cleared (heddle
//     never encrypts, and the records' checksums do not cover it); a log
//     shorter than its header is removed.
//   - A missing or unreadable MANIFEST is rebuilt listing every table in
//     the directory at level 0, where tables may overlap and the newest
//     version of a key wins: nothing is dropped. (Badger places tables at
//     deeper levels again as it compacts.)
//   - A damaged or missing table cannot be repaired in place: dropping it
//     would bring back older versions of its keys from deeper levels. The
//     plan says so and Repair refuses; restore a backup, or, on a cluster
//     node, let the node rebuild its state from the cluster.

// ErrRepairRefused reports a Repair that did nothing: the plan holds a
// damage no repair can fix, or the directory changed since it was planned.
var ErrRepairRefused = errors.New("storage: repair refused")

// RepairAction is what a repair does about one damaged file.
type RepairAction struct {
	// Damage is what the checks found.
	Damage *DamagedError
	// Do says in words what the repair does, and what it drops.
	Do string
	// TruncateTo is the size the file is cut to; -1 when it is not cut.
	TruncateTo int64
	// DropBytes, DropRecords and DropTxns are what the action drops: the
	// bytes, the intact records among them and the committed transactions
	// those end (0 for an action that drops nothing).
	DropBytes             int64
	DropRecords, DropTxns int
	// Unrepairable, when not empty, says why no repair can fix this.
	Unrepairable string

	kind repairKind
}

type repairKind int

const (
	repairTruncate repairKind = iota + 1
	repairClearKeyID
	repairRemove
	repairRebuildManifest
)

// RepairPlan lists what a repair of Dir does, one action per damaged file.
type RepairPlan struct {
	Dir     string
	Actions []RepairAction
}

// Repairable reports whether Repair would carry the plan out: every
// action can be done. A plan without actions has nothing to repair.
func (p *RepairPlan) Repairable() bool {
	for _, a := range p.Actions {
		if a.Unrepairable != "" {
			return false
		}
	}
	return true
}

// DropBytes returns the bytes the whole plan drops.
func (p *RepairPlan) DropBytes() int64 {
	var n int64
	for _, a := range p.Actions {
		n += a.DropBytes
	}
	return n
}

// PlanRepair checks dir (as Check does, under Badger's lock) and returns
// what a repair would do; it changes nothing.
func PlanRepair(dir string) (*RepairPlan, error) {
	unlock, err := lockDir(dir)
	if err != nil {
		return nil, err
	}
	defer unlock()
	return planRepair(dir)
}

func planRepair(dir string) (*RepairPlan, error) {
	insp, err := inspect(dir)
	if err != nil {
		return nil, err
	}
	plan := &RepairPlan{Dir: dir}
	rebuilt := false
	for _, d := range insp.damages {
		a := RepairAction{Damage: d, TruncateTo: -1}
		name := filepath.Base(d.File)
		switch d.Kind {
		case DamageLogCorrupt, DamageLogCut:
			s := insp.logs[name]
			a.kind, a.TruncateTo = repairTruncate, s.validEnd
			a.DropBytes = fileSize(d.File) - s.validEnd
			if d.Kind == DamageLogCorrupt {
				// What lies past the last intact record is padding.
				a.DropBytes = d.Offset + d.BytesAfter - s.validEnd
			}
			a.DropRecords, a.DropTxns = s.pending+d.RecordsAfter, d.TxnsAfter
			vlog := strings.HasSuffix(name, ".vlog")
			a.Do = fmt.Sprintf("truncate to %d bytes, dropping %d bytes from offset %d: %s",
				s.validEnd, a.DropBytes, s.validEnd, dropWhat(s.pending, d, vlog))
			if d.Kind == DamageLogCut {
				a.Do += "; whatever the file held past its cut end is already gone"
			}
			if vlog {
				a.Do += "; keys whose values were stored there will fail to read"
			}
		case DamageLogHeader:
			if fileSize(d.File) < logHeaderBytes {
				a.kind, a.DropBytes = repairRemove, fileSize(d.File)
				a.Do = fmt.Sprintf("remove the file, dropping its %d bytes (it holds no record)", a.DropBytes)
			} else {
				a.kind = repairClearKeyID
				a.Do = "clear the encryption key id in the header (bytes 0-7); drops nothing, and the records are checked again after"
			}
		case DamageManifestMissing, DamageManifestCorrupt:
			if rebuilt {
				continue
			}
			rebuilt = true
			var tables []string
			for name, td := range insp.tables {
				if td == nil {
					tables = append(tables, name)
				}
			}
			a.kind = repairRebuildManifest
			a.Do = fmt.Sprintf("write a new MANIFEST listing the %s in the directory at level 0; drops nothing", count(len(tables), "table"))
			if d.Kind == DamageManifestCorrupt {
				a.Do += " (the old one is kept as " + manifestName + ".damaged)"
			}
		default:
			a.Unrepairable = "a damaged or missing table cannot be repaired in place: dropping it would bring back older versions of its keys. " +
				"Restore a backup; on a cluster node, move the data directory aside and let the node rebuild its state from the cluster"
		}
		plan.Actions = append(plan.Actions, a)
	}
	return plan, nil
}

// dropWhat says what a log truncation drops.
func dropWhat(pending int, d *DamagedError, vlog bool) string {
	var parts []string
	if pending > 0 {
		parts = append(parts, fmt.Sprintf("%s of a transaction the damage left unfinished", count(pending, "record")))
	}
	switch {
	case d.RecordsAfter > 0 && vlog:
		parts = append(parts, fmt.Sprintf("%s after the damage at offset %d", count(d.RecordsAfter, "intact value"), d.Offset))
	case d.RecordsAfter > 0:
		parts = append(parts, fmt.Sprintf("%s after the damage at offset %d, ending %s",
			count(d.RecordsAfter, "intact record"), d.Offset, count(d.TxnsAfter, "committed transaction")))
	}
	if len(parts) == 0 {
		return fmt.Sprintf("the broken record at offset %d and nothing intact", d.Offset)
	}
	return strings.Join(parts, ", and ")
}

// Repair carries out plan on its directory, under Badger's lock, after
// checking again that the directory still holds exactly the damage the
// plan was made for. It does nothing, and returns ErrRepairRefused, when
// the plan is not Repairable or the directory changed. After a repair,
// check again: clearing a log header can reveal damage in its records.
func Repair(plan *RepairPlan) error {
	if !plan.Repairable() {
		return fmt.Errorf("%w: %s holds damage no repair can fix", ErrRepairRefused, plan.Dir)
	}
	unlock, err := lockDir(plan.Dir)
	if err != nil {
		return err
	}
	defer unlock()
	now, err := planRepair(plan.Dir)
	if err != nil {
		return err
	}
	if !samePlan(plan, now) {
		return fmt.Errorf("%w: %s changed since the repair was planned; plan it again", ErrRepairRefused, plan.Dir)
	}
	for _, a := range plan.Actions {
		if err := a.apply(plan.Dir); err != nil {
			return fmt.Errorf("storage: repair of %s: %w", a.Damage.File, err)
		}
	}
	return syncDir(plan.Dir)
}

func samePlan(a, b *RepairPlan) bool {
	return slices.EqualFunc(a.Actions, b.Actions, func(x, y RepairAction) bool {
		return *x.Damage == *y.Damage && x.Do == y.Do && x.TruncateTo == y.TruncateTo && x.kind == y.kind
	})
}

func (a RepairAction) apply(dir string) error {
	switch a.kind {
	case repairTruncate:
		return truncateSynced(a.Damage.File, a.TruncateTo)
	case repairRemove:
		return os.Remove(a.Damage.File)
	case repairClearKeyID:
		f, err := os.OpenFile(a.Damage.File, os.O_RDWR, 0)
		if err != nil {
			return err
		}
		if _, err := f.WriteAt(make([]byte, 8), 0); err != nil {
			return errors.Join(err, f.Close())
		}
		return errors.Join(f.Sync(), f.Close())
	case repairRebuildManifest:
		return rebuildManifest(dir, a.Damage.Kind == DamageManifestCorrupt)
	}
	return fmt.Errorf("no repair for %s", a.Damage.Kind)
}

func truncateSynced(path string, size int64) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	if err := f.Truncate(size); err != nil {
		return errors.Join(err, f.Close())
	}
	return errors.Join(f.Sync(), f.Close())
}

// Badger's MANIFEST format: "Bdgr", a 2-byte external version (heddle sets
// none: 0) and Badger's 2-byte format version, then change sets, each a
// 4-byte length, a 4-byte CRC-32C and the protobuf-encoded set, all
// big-endian.
const manifestFormatVersion = 8

// rebuildManifest writes a MANIFEST listing every table file of dir at
// level 0, keeping a damaged one as MANIFEST.damaged.
func rebuildManifest(dir string, keepOld bool) error {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	var ids []uint64
	for _, e := range ents {
		if id, ok := table.ParseFileID(e.Name()); ok && strings.HasSuffix(e.Name(), ".sst") {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	set := &pb.ManifestChangeSet{}
	for _, id := range ids {
		set.Changes = append(set.Changes, &pb.ManifestChange{
			Id: id, Op: pb.ManifestChange_CREATE, Level: 0,
			// Badger records every table this way when it does not
			// encrypt; the compression is none, as heddle writes them.
			EncryptionAlgo: pb.EncryptionAlgo_aes,
		})
	}
	body, err := proto.Marshal(set)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	buf.WriteString("Bdgr")
	buf.Write(binary.BigEndian.AppendUint16(nil, 0))
	buf.Write(binary.BigEndian.AppendUint16(nil, manifestFormatVersion))
	buf.Write(binary.BigEndian.AppendUint32(nil, uint32(len(body))))
	buf.Write(binary.BigEndian.AppendUint32(nil, crc32.Checksum(body, castagnoli)))
	buf.Write(body)

	path := filepath.Join(dir, manifestName)
	if keepOld {
		if err := os.Rename(path, path+".damaged"); err != nil {
			return err
		}
	}
	tmp := path + ".repair"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	if _, err := f.Write(buf.Bytes()); err != nil {
		return errors.Join(err, f.Close())
	}
	if err := errors.Join(f.Sync(), f.Close()); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	return errors.Join(d.Sync(), d.Close())
}
