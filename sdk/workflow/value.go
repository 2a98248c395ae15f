package workflow

import (
	"fmt"
	"reflect"

	"github.com/heddlewf/heddle/sdk/converter"
)

// assign stores v, a value sent on a channel or set on a future, into
// valuePtr. Go values are stored as they are, so the target must be able to
// hold them: the same type, an assignable one, or *any. A payload that came
// from outside the workflow (a converter.EncodedValue) is decoded into the
// target instead, unless the target is itself a *converter.EncodedValue,
// which receives the payload undecoded; an empty payload leaves the target
// alone. A nil valuePtr discards v.
func assign(v any, valuePtr any) error {
	if valuePtr == nil {
		return nil
	}
	dst := reflect.ValueOf(valuePtr)
	if dst.Kind() != reflect.Pointer || dst.IsNil() {
		return fmt.Errorf("the value pointer is a %T, not a non-nil pointer", valuePtr)
	}
	elem := dst.Elem()
	if ev, ok := v.(converter.EncodedValue); ok {
		if elem.Type() == encodedValueType || elem.Type() == reflect.TypeOf(ev) {
			elem.Set(reflect.ValueOf(ev)) // the caller decodes it later
			return nil
		}
		if !ev.HasValue() {
			return nil // a signal without arguments sets nothing
		}
		if err := ev.Get(valuePtr); err != nil {
			return fmt.Errorf("decode payload: %w", err)
		}
		return nil
	}
	if v == nil {
		switch elem.Kind() {
		case reflect.Interface, reflect.Pointer, reflect.Map, reflect.Slice, reflect.Func, reflect.Chan:
			elem.SetZero()
			return nil
		}
		return fmt.Errorf("cannot store nil in a %s", elem.Type())
	}
	src := reflect.ValueOf(v)
	if !src.Type().AssignableTo(elem.Type()) {
		return fmt.Errorf("cannot store a value of type %s in a %s", src.Type(), elem.Type())
	}
	elem.Set(src)
	return nil
}

// encodedValueType is the target that takes a payload undecoded.
var encodedValueType = reflect.TypeFor[converter.EncodedValue]()
