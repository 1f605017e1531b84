/* semver.h - the text forms of redrive filters: a worker's semantic version (Semantic
 * Versioning 2.0.0: MAJOR.MINOR.PATCH, optional -pre-release and +build) and an RFC 3339
 * time. Validation and comparison only; pure, thread-safe. The database compares the stored
 * versions with the same rules (verdict_semver_cmp, sql/migrations/0016_checkpoints.sql). */
#ifndef VERDICT_SEMVER_H
#define VERDICT_SEMVER_H

#include <stdbool.h>

/* The longest worker_version accepted, in bytes. */
#define VD_SEMVER_MAX 64

/* Whether s is a semantic version of at most VD_SEMVER_MAX bytes: numbers without leading
 * zeros, pre-release identifiers [0-9A-Za-z-]+ (numeric ones without leading zeros), build
 * identifiers [0-9A-Za-z-]+, none empty. */
bool vd_semver_valid(const char *s);

/* Precedence of two valid versions: < 0, 0 or > 0 (the build is ignored; a pre-release is
 * lower than its release; 1.10.0 > 1.9.3). Both must satisfy vd_semver_valid. */
int vd_semver_compare(const char *a, const char *b);

/* Whether s is an RFC 3339 date-time: YYYY-MM-DDTHH:MM:SS[.frac](Z|+hh:mm|-hh:mm), with
 * calendar-valid fields (month 01-12, day within the month, hour < 24, minute < 60,
 * second <= 60), at most 40 bytes. */
bool vd_rfc3339_valid(const char *s);

#endif
