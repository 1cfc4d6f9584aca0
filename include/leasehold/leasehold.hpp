// Everything of leasehold's public API.
#pragma once

#include "leasehold/client.hpp"
#include "leasehold/error.hpp"
#include "leasehold/query.hpp"
#include "leasehold/reply.hpp"
#include "leasehold/request.hpp"
#include "leasehold/url.hpp"
#include "leasehold/version.hpp"
