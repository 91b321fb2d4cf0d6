/* qg-fake.h - a hostile QMP peer for the tool's protocol tests (prefix qgt_fake_)
 *
 * Not a stand-in for QEMU where QEMU's behaviour is tested (those tests run real QEMU):
 * this is the peer that sends what QEMU never would, to prove the tool refuses it. It
 * listens on a unix socket, greets like QEMU 7.2, answers each command from a table
 * (defaults: a running guest, every command accepted with `{}`, `migrate` then silence),
 * records the commands it got, and keeps every fd passed to it (getfd) open, without
 * reading it, until it is freed.
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

typedef struct _QgtFake QgtFake;

QgtFake *qgt_fake_start(void);

/* The socket to give the tool. */
const char *qgt_fake_socket(QgtFake *f);

/* The first line sent (default: a QEMU 7.2 greeting). Call before the tool connects. */
void qgt_fake_set_greeting(QgtFake *f, const char *line);

/**
 * qgt_fake_reply:
 * How to answer @command from now on: @reply is the JSON of its "return" member; or,
 * starting with '!', a whole line sent as it is, with "@ID@" replaced by the request's
 * id; or NULL: no answer at all. @then: (nullable) more lines sent right after (events).
 */
void qgt_fake_reply(QgtFake *f, const char *command, const char *reply, const char *then);

/* TRUE when @command was received. */
gboolean qgt_fake_got(QgtFake *f, const char *command);

/* The commands received, in order, separated by spaces. */
char *qgt_fake_commands(QgtFake *f);

/* Stops the peer (closes the connection and every fd it kept). NULL allowed. */
void qgt_fake_free(QgtFake *f);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(QgtFake, qgt_fake_free)

G_END_DECLS
