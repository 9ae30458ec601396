/* qemu-exit CODE: end the guest through qemu's isa-debug-exit device.
 *
 * Why: a plain poweroff makes qemu exit 0 whatever happened in the guest, so the
 * host could not tell a pass from a crash. Writing CODE to the debug-exit port
 * makes qemu exit with (CODE << 1) | 1, an odd status a poweroff never gives.
 * The cloud kernels have no /dev/port, hence ioperm + outl from this program.
 *
 * Expects: -device isa-debug-exit,iobase=0xf4,iosize=0x04
 * Build:   gcc -static -O2 -o qemu-exit qemu-exit.c
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/io.h>
#include <termios.h>
#include <unistd.h>

#define DEBUG_EXIT_PORT 0xf4

int main(int argc, char **argv)
{
	long code = argc > 1 ? strtol(argv[1], NULL, 10) : 1;
	int fd;

	/* qemu's status is one byte: (code << 1) | 1 must fit. */
	if (code < 0 || code > 127)
		code = 127;

	/* The 8250 driver sends queued tty output from interrupts; leaving the
	 * guest now would cut the last lines the test printed. Wait until sent. */
	tcdrain(STDOUT_FILENO);
	tcdrain(STDERR_FILENO);
	fd = open("/dev/console", O_WRONLY | O_NOCTTY);
	if (fd >= 0) {
		tcdrain(fd);
		close(fd);
	}

	if (ioperm(DEBUG_EXIT_PORT, 4, 1) != 0) {
		perror("qemu-exit: ioperm");
		return 1;
	}
	outl((unsigned int)code, DEBUG_EXIT_PORT);

	/* Only reached when the device is missing: qemu would have exited. */
	sleep(1);
	fprintf(stderr, "qemu-exit: no isa-debug-exit device at 0x%x\n", DEBUG_EXIT_PORT);
	return 1;
}
