// Everything of leasehold's public API.
#pragma once

#include "leasehold/capability.hpp"
#include "leasehold/client.hpp"
#include "leasehold/cron.hpp"
#include "leasehold/error.hpp"
#include "leasehold/lease.hpp"
#include "leasehold/lock.hpp"
#include "leasehold/log.hpp"
#include "leasehold/query.hpp"
#include "leasehold/reply.hpp"
#include "leasehold/request.hpp"
#include "leasehold/rwlock.hpp"
#include "leasehold/slot.hpp"
#include "leasehold/url.hpp"
#include "leasehold/version.hpp"
#include "leasehold/while_held.hpp"
#include "leasehold/with_lock.hpp"
