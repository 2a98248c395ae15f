// Package chaos kills, pauses and partitions real heddle processes under load and checks that nothing acknowledged was lost or done twice.
package chaos
