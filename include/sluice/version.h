/*===- sluice/version.h - the Sluice version bundles are stamped with -----===*
 *
 * sluice-compile writes SLUICE_VERSION_STRING into every bundle's manifest;
 * the runtime refuses a bundle whose major.minor differs from its own.
 *
 *===----------------------------------------------------------------------===*/
#ifndef SLUICE_VERSION_H
#define SLUICE_VERSION_H

#define SLUICE_VERSION_MAJOR 0
#define SLUICE_VERSION_MINOR 3
#define SLUICE_VERSION_PATCH 0
#define SLUICE_VERSION_STRING "0.3.0"

#endif /* SLUICE_VERSION_H */
