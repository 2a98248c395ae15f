package ui

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sort"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/engine/httpapi"
)

// maxLeaseLookups bounds the jobs whose steps the Resources page reads to
// tell who holds each lease and until when: a pool with thousands of
// leases still renders at once, the leases past the bound without those
// details.
const maxLeaseLookups = 50

// resourcesData is the Resources page's.
type resourcesData struct {
	// Done says what the last button did (the flash after its redirect).
	Done string
	// Units, Held and Free sum every resource: Free counts the units not
	// held of the resources not drained.
	Units, Held, Free int
	Pools             []poolView
	Resources         []resourceView
	// Drained are the ids of the resources drained.
	Drained []string
	Waiters []engine.ResourceWaiter
	// NoWaiterList: the API has no waiter list (an older server).
	NoWaiterList bool
	// Unlooked counts the leases shown without their step's details
	// (past maxLeaseLookups jobs).
	Unlooked    int
	LookupBound int
}

// poolView is the occupancy of the resources that offer one capability: a
// step requiring it is leased a unit of one of them.
type poolView struct {
	Capability string
	// Free counts the units not held of the resources not drained;
	// DrainedUnits the units of the drained ones.
	Resources, Capacity, Held, Free, DrainedUnits int
}

// resourceView is one resource and the leases on it.
type resourceView struct {
	*engine.Resource
	Held, Free int
	Leases     []leaseView
}

// leaseView is one held unit: the step holding it and, from the step's
// engine state, its worker, state and lease expiry.
type leaseView struct {
	engine.ResourceHolder
	// Info is the holding step's engine state; nil when it was not read.
	Info *engine.StepInfo
}

// resourceDoneMessages are the flash messages of the drain buttons.
var resourceDoneMessages = map[string]string{
	"drain":   "Resource %s drained: it takes no new leases; the ones it holds finish.",
	"undrain": "Resource %s undrained: it takes leases again.",
}

// loadResources reads the Resources page: the pool, the steps holding its
// units, and the waiter queue.
func loadResources(ctx context.Context, api *backend, r *http.Request) (any, error) {
	rs, err := api.Resources(ctx)
	if err != nil {
		return nil, err
	}
	d := &resourcesData{LookupBound: maxLeaseLookups}
	if msg, ok := resourceDoneMessages[r.URL.Query().Get("done")]; ok {
		d.Done = fmt.Sprintf(msg, r.URL.Query().Get("id"))
	}
	infos := map[engine.JobID]map[string]*engine.StepInfo{}
	pools := map[string]*poolView{}
	for _, res := range rs {
		v := resourceView{Resource: res, Held: len(res.Holders), Free: res.Free()}
		d.Units += res.Capacity
		d.Held += v.Held
		if res.Drained {
			d.Drained = append(d.Drained, res.ID)
		} else {
			d.Free += v.Free
		}
		for _, c := range res.Capabilities {
			p := pools[c]
			if p == nil {
				p = &poolView{Capability: c}
				pools[c] = p
			}
			p.Resources++
			p.Capacity += res.Capacity
			p.Held += v.Held
			if res.Drained {
				p.DrainedUnits += res.Capacity
			} else {
				p.Free += v.Free
			}
		}
		for _, h := range res.Holders {
			info, err := holderInfo(ctx, api, infos, h)
			if err != nil {
				return nil, err
			}
			if info == nil {
				d.Unlooked++
			}
			v.Leases = append(v.Leases, leaseView{ResourceHolder: h, Info: info})
		}
		d.Resources = append(d.Resources, v)
	}
	for _, p := range pools {
		d.Pools = append(d.Pools, *p)
	}
	sort.Slice(d.Pools, func(a, b int) bool { return d.Pools[a].Capability < d.Pools[b].Capability })
	d.Waiters, err = api.ResourceWaiters(ctx, 0)
	if errors.Is(err, httpapi.ErrNoRoute) {
		d.NoWaiterList, err = true, nil
	}
	return d, err
}

// holderInfo returns the info of the step holding h, reading the steps of
// its job once per page (of at most maxLeaseLookups jobs); nil when the
// bound is reached or the job is gone.
func holderInfo(ctx context.Context, api *backend, infos map[engine.JobID]map[string]*engine.StepInfo, h engine.ResourceHolder) (*engine.StepInfo, error) {
	steps, ok := infos[h.Job]
	if !ok {
		if len(infos) == maxLeaseLookups {
			return nil, nil
		}
		// The page shows who holds a unit, not what a step asks: a
		// question of more than a byte is left out.
		list, err := api.QuerySteps(ctx, engine.StepsQuery{Target: engine.Target{Job: h.Job}, MaxQuestionBytes: 1})
		if err != nil && !errors.Is(err, engine.ErrUnknownJob) {
			return nil, err
		}
		steps = map[string]*engine.StepInfo{}
		for i := range list {
			steps[list[i].Step] = &list[i]
		}
		infos[h.Job] = steps
	}
	return steps[h.Step], nil
}

// drainResource drains the form's resource, or with undrain=1 lets it take
// leases again. Done, it sends the browser back to the Resources page;
// refused, it shows that page with the error.
func (h *Handler) drainResource(rq *request) (*page, error) {
	id, undrain := formValue(rq.r, "id"), formValue(rq.r, "undrain") != ""
	what := "drain"
	if undrain {
		what = "undrain"
	}
	var err error
	switch {
	case !rq.can.Can(ActionDrain):
		who := "This token"
		if r := rq.can.Role(); r != "" {
			who = "The " + r + " role"
		}
		err = &pageError{status: http.StatusForbidden, msg: fmt.Sprintf("%s may not %s resources.", who, what)}
	case id == "":
		err = &pageError{status: http.StatusBadRequest, msg: "The form names no resource to " + what + "."}
	default:
		_, err = rq.api.DrainResource(rq.ctx, engine.DrainResource{ID: id, Undrain: undrain})
	}
	if err == nil {
		return nil, redirect{to: fmt.Sprintf("%s/resources?done=%s&id=%s", Path, what, url.QueryEscape(id))}
	}
	if errors.Is(err, httpapi.ErrUnauthorized) {
		return nil, err // to the sign-in page
	}
	data, lerr := loadResources(rq.ctx, rq.api, rq.r)
	if lerr != nil {
		return nil, err // the page itself cannot be shown: the action's error says why
	}
	p := &page{Template: "resources.html", Title: "Resources", Nav: "resources", Data: data,
		Status: statusOf(err), Error: fmt.Sprintf("Could not %s resource %s: %v", what, id, err)}
	var pe *pageError
	if errors.As(err, &pe) {
		p.Error = pe.msg
	}
	return p, nil
}
