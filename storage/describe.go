package storage

import (
	"encoding/binary"
	"encoding/hex"
	"strconv"
	"strings"
)

// DescribeKey returns a one-line description of a key of heddle's keyspace
// (keys.go, taskkeys.go) for people: its prefix, then each of its parts as
// name=value, numbers in decimal and strings bare when they are plain words
// and quoted otherwise. "q queue=orders ready=1000 job=7" is the ready
// index entry of job 7, ready at 1000 ms in queue "orders". Trace tests,
// debugging output and tools print keys with it.
//
// It decodes the bytes it is given and trusts none of them: a key too short
// for its prefix, or with a length that runs past its end, is described as
// "invalid key <hex>" instead, and a prefix the keyspace does not have as
// "unknown key <hex>". The description is one line of valid UTF-8 whatever
// the bytes (quoting escapes control characters, newlines and invalid
// UTF-8), it allocates in proportion to the key, and it does not recurse.
// Status numbers stay numbers: this package knows no job semantics.
func DescribeKey(k []byte) string {
	if len(k) == 0 {
		return "invalid key (empty)"
	}
	d := keyDescriber{k: k, rest: k[1:]}
	var ok bool
	switch k[0] {
	case PrefixMeta:
		return "m " + describeString(string(k[1:]))
	case PrefixJob, PrefixPaused:
		ok = d.u64("job") && d.end()
	case PrefixEvent:
		ok = d.u64("job") && d.u64("seq") && d.end()
	case PrefixEffect, PrefixStep:
		ok = d.u64("job") && d.tail("step")
	case PrefixReady:
		ok = d.str("queue") && d.u64("ready") && d.u64("job") && d.end()
	case PrefixLease:
		ok = d.u64("expiry") && d.u64("job") && d.end()
	case PrefixTimer:
		ok = d.u64("fire") && d.u64("job") && d.tail("timer")
	case PrefixDelayed:
		ok = d.u64("release") && d.u64("job") && d.end()
	case PrefixDeadline:
		ok = d.u64("due") && d.u64("job") && d.end()
	case PrefixChild:
		ok = d.u64("parent") && d.u64("child") && d.end()
	case PrefixWorkflow:
		ok = d.tail("workflow")
	case PrefixStatus:
		ok = d.byte("status") && d.u64("job") && d.end()
	case PrefixType:
		ok = d.str("type") && d.u64("job") && d.end()
	case PrefixQueue:
		ok = d.str("queue") && d.u64("job") && d.end()
	case PrefixClosed:
		ok = d.u64("closed") && d.u64("job") && d.end()
	case PrefixRuns:
		ok = d.str("workflow") && d.u64("job") && d.end()
	case PrefixRequest:
		ok = d.tail("request")
	case PrefixReqAge:
		ok = d.u64("at") && d.tail("request")
	case PrefixResource:
		ok = d.tail("resource")
	case PrefixStepDue:
		ok = d.u64("due") && d.u64("job") && d.tail("step")
	case PrefixWaiter:
		ok = d.u64("seq") && d.u64("job") && d.tail("step")
	case PrefixSchedule:
		ok = d.tail("schedule")
	case PrefixBatch:
		ok = d.tail("batch")
	case PrefixSchedDue:
		ok = d.u64("due") && d.tail("schedule")
	case PrefixReviewLease:
		ok = d.u64("expiry") && d.u64("task") && d.end()
	case PrefixReview:
		return d.task()
	case PrefixOutbox:
		return d.outbox()
	default:
		return "unknown key " + hex.EncodeToString(k)
	}
	if !ok {
		return "invalid key " + hex.EncodeToString(k)
	}
	return d.b.String()
}

// keyDescriber writes the description of k while it consumes rest, the
// bytes after the prefix (and after a task key's sub-tag).
type keyDescriber struct {
	k    []byte
	rest []byte
	b    strings.Builder
}

func (d *keyDescriber) field(name, val string) {
	if d.b.Len() == 0 {
		d.b.WriteString(string(rune(d.k[0])))
		if d.k[0] == PrefixReview || d.k[0] == PrefixOutbox {
			d.b.WriteByte(d.k[1])
		}
	}
	d.b.WriteByte(' ')
	d.b.WriteString(name)
	d.b.WriteByte('=')
	d.b.WriteString(val)
}

func (d *keyDescriber) u64(name string) bool {
	if len(d.rest) < 8 {
		return false
	}
	d.field(name, strconv.FormatUint(binary.BigEndian.Uint64(d.rest), 10))
	d.rest = d.rest[8:]
	return true
}

func (d *keyDescriber) byte(name string) bool {
	if len(d.rest) < 1 {
		return false
	}
	d.field(name, strconv.Itoa(int(d.rest[0])))
	d.rest = d.rest[1:]
	return true
}

// str reads a string with its 2-byte length (one that is not a key's last part).
func (d *keyDescriber) str(name string) bool {
	if len(d.rest) < 2 {
		return false
	}
	n := int(binary.BigEndian.Uint16(d.rest))
	if len(d.rest) < 2+n {
		return false
	}
	d.field(name, describeString(string(d.rest[2:2+n])))
	d.rest = d.rest[2+n:]
	return true
}

// tail reads the rest of the key as a string, the last part of a key.
func (d *keyDescriber) tail(name string) bool {
	d.field(name, describeString(string(d.rest)))
	d.rest = nil
	return true
}

func (d *keyDescriber) end() bool { return len(d.rest) == 0 }

func (d *keyDescriber) task() string {
	if len(d.k) < 2 {
		return "invalid key " + hex.EncodeToString(d.k)
	}
	d.rest = d.k[2:]
	var ok bool
	switch d.k[1] {
	case reviewTagRecord, reviewTagAwait:
		ok = d.u64("task") && d.end()
	case reviewTagEvent:
		ok = d.u64("task") && d.u64("seq") && d.end()
	case reviewTagJob:
		ok = d.str("job") && d.u64("task") && d.end()
	case reviewTagPhase:
		ok = d.str("job") && d.tail("phase")
	case reviewTagDep:
		ok = d.u64("upstream") && d.u64("task") && d.end()
	case reviewTagWork, reviewTagReview:
		ok = d.str("queue") && d.u64("ready") && d.u64("task") && d.end()
	default:
		return "unknown key " + hex.EncodeToString(d.k)
	}
	if !ok {
		return "invalid key " + hex.EncodeToString(d.k)
	}
	return d.b.String()
}

// describeString returns s bare when it is a plain word (letters, digits
// and . _ - : / @), and Go-quoted otherwise (empty, spaces, '=', control
// characters, invalid UTF-8), so that a description stays one unambiguous
// line.
func describeString(s string) string {
	if s == "" {
		return `""`
	}
	for _, r := range s {
		plain := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' ||
			strings.ContainsRune("._-:/@", r)
		if !plain {
			return strconv.Quote(s)
		}
	}
	return s
}
