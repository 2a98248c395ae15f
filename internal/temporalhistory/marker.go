package temporalhistory

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/heddlewf/heddle/engine"
)

// The markers of Temporal's Go SDK and what they hold.
const (
	markerSideEffect        = "SideEffect"
	markerVersion           = "Version"
	markerMutableSideEffect = "MutableSideEffect"
	markerLocalActivity     = "LocalActivity"
)

// marker maps a MarkerRecorded of Temporal's Go SDK onto heddle's
// record of the same call: SideEffect and a local activity take the next
// step, as in heddle; GetVersion and MutableSideEffect are keyed markers
// (the change id; the id and the call count).
func (d *decoder) marker(ev *rawEvent, a *markerAttrs) error {
	detail := func(key string) (*payloads, error) {
		p := a.Details[key]
		if p == nil {
			return nil, fmt.Errorf("%s marker has no %q detail", a.MarkerName, key)
		}
		return p, nil
	}
	switch a.MarkerName {
	case markerSideEffect:
		data, err := toJSONArray(a.Details["data"])
		if err != nil {
			return fmt.Errorf("side effect data: %w", err)
		}
		c := d.newCommand(ev.ID, "side_effect")
		d.emit(ev, engine.Event{Type: engine.EventMarkerRecorded, Step: c.step, Name: c.name, Payload: data})
	case markerVersion:
		idp, err := detail("change-id")
		if err != nil {
			return err
		}
		vp, err := detail("version")
		if err != nil {
			return err
		}
		var changeID string
		var version int64
		if err := oneValue(idp, &changeID); err != nil {
			return fmt.Errorf("version marker change-id: %w", err)
		}
		if err := oneValue(vp, &version); err != nil {
			return fmt.Errorf("version marker version: %w", err)
		}
		d.emit(ev, engine.Event{Type: engine.EventMarkerRecorded, Step: "k:version:" + changeID, Name: "version",
			Payload: []byte("[" + strconv.FormatInt(version, 10) + "]")})
	case markerMutableSideEffect:
		idp, err := detail("side-effect-id")
		if err != nil {
			return err
		}
		cp, err := detail("mutable-side-effect-call-counter")
		if err != nil {
			return err
		}
		var id string
		var calls int64
		if err := oneValue(idp, &id); err != nil {
			return fmt.Errorf("mutable side effect id: %w", err)
		}
		if err := oneValue(cp, &calls); err != nil {
			return fmt.Errorf("mutable side effect call counter: %w", err)
		}
		// Temporal appends its command counter to the id: "<id>_<n>".
		if i := strings.LastIndexByte(id, '_'); i > 0 {
			id = id[:i]
		}
		data, err := toJSONArray(a.Details["data"])
		if err != nil {
			return fmt.Errorf("mutable side effect data: %w", err)
		}
		d.emit(ev, engine.Event{Type: engine.EventMarkerRecorded, Step: fmt.Sprintf("k:mutable:%s:%d", id, calls),
			Name: "mutable_side_effect", Payload: data})
	case markerLocalActivity:
		dp, err := detail("data")
		if err != nil {
			return err
		}
		var la struct {
			ActivityType string
		}
		if err := oneValue(dp, &la); err != nil || la.ActivityType == "" {
			return errors.New("local activity marker data names no ActivityType")
		}
		c := d.newCommand(ev.ID, la.ActivityType)
		if len(a.Failure) > 0 && string(a.Failure) != "null" {
			p, err := failurePayload(a.Failure, errors.New("failed"))
			if err != nil {
				return err
			}
			d.emit(ev, engine.Event{Type: engine.EventActivityFailed, Step: c.step, Name: c.name, Payload: p, Commit: true})
			return nil
		}
		res, err := toJSONArray(a.Details["result"])
		if err != nil {
			return fmt.Errorf("local activity result: %w", err)
		}
		d.emit(ev, engine.Event{Type: engine.EventActivityCompleted, Step: c.step, Name: c.name, Payload: res, Commit: true})
	default:
		return unmappable(ev, fmt.Sprintf("marker %q is not one of Temporal's Go SDK markers heddle maps (SideEffect, Version, MutableSideEffect, LocalActivity)", truncate(a.MarkerName)))
	}
	return nil
}
