// cpp-httplib as Debian's libcpp-httplib-dev builds it: its classes have other members without
// these flags, so every file that uses it includes it through here.
#pragma once

#define CPPHTTPLIB_OPENSSL_SUPPORT
#define CPPHTTPLIB_ZLIB_SUPPORT
#define CPPHTTPLIB_BROTLI_SUPPORT
#include <httplib.h>
