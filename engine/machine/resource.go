package machine

import (
	"fmt"
	"slices"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/storage"
)

func (a *applier) addResource(c *engine.AddResource) (engine.Result, error) {
	if err := a.resourcesHere("AddResource", "the resource pool"); err != nil {
		return nil, err
	}
	old, err := readResource(a.tx.Get, c.ID)
	if err != nil {
		return nil, err
	}
	if old != nil {
		return nil, fmt.Errorf("%w: %q", engine.ErrResourceExists, c.ID)
	}
	rs := &engine.Resource{ID: c.ID, Capabilities: slices.Clone(c.Capabilities), Labels: cloneLabels(c.Labels),
		Capacity: c.Capacity, CreatedMS: a.now}
	slices.Sort(rs.Capabilities)
	rs.Capabilities = slices.Compact(rs.Capabilities)
	a.saveResource(rs)
	n, err := a.serveWaiters(rs)
	if err != nil {
		return nil, err
	}
	return &engine.ResourceResult{Resource: rs, Granted: n}, nil
}

func (a *applier) drainResource(c *engine.DrainResource) (engine.Result, error) {
	if err := a.resourcesHere("DrainResource", "the resource pool"); err != nil {
		return nil, err
	}
	rs, err := a.resource(c.ID)
	if err != nil {
		return nil, err
	}
	if rs.Drained == !c.Undrain {
		return &engine.ResourceResult{Resource: rs}, nil // already so: nothing to write
	}
	rs.Drained = !c.Undrain
	a.saveResource(rs)
	n, err := a.serveWaiters(rs)
	if err != nil {
		return nil, err
	}
	return &engine.ResourceResult{Resource: rs, Granted: n}, nil
}

func (a *applier) removeResource(c *engine.RemoveResource) (engine.Result, error) {
	if err := a.resourcesHere("RemoveResource", "the resource pool"); err != nil {
		return nil, err
	}
	rs, err := a.resource(c.ID)
	if err != nil {
		return nil, err
	}
	if n := len(rs.Holders); n > 0 {
		return nil, fmt.Errorf("%w: resource %q holds %d step leases (drain it, and remove it once they ended)", engine.ErrResourceBusy, c.ID, n)
	}
	a.tx.Delete(storage.ResourceKey(c.ID))
	return &engine.ResourceResult{}, nil
}

// resource reads resource id, refusing an unknown one.
func (a *applier) resource(id string) (*engine.Resource, error) {
	rs, err := readResource(a.tx.Get, id)
	if err == nil && rs == nil {
		err = fmt.Errorf("%w: %q", engine.ErrUnknownResource, id)
	}
	return rs, err
}
