/* When a live preview is due (daemon/render_host.c,
 * ATL_RENDER_PREVIEWS_LIVE): the rule that the page's previews follow,
 * alone, since through the farm its timing depends on the machine. */
#include "atl-build.h"

#include <criterion/criterion.h>

#include "render_host.h"

Test(live_preview, first_whole_picture_at_once) {
  /* Part of the frame is still black: not yet, however long it took. */
  cr_expect_not(atl__live_preview_due(0, 0, 0));
  cr_expect_not(atl__live_preview_due(0, 0, 60000));
  /* The first in which every pixel has a sample: at once. */
  cr_expect(atl__live_preview_due(0, 1, 0));
  cr_expect(atl__live_preview_due(0, 5, 0));
}

Test(live_preview, then_when_the_samples_have_doubled) {
  cr_expect_not(atl__live_preview_due(1, 1, 0));
  cr_expect(atl__live_preview_due(1, 2, 0));
  cr_expect_not(atl__live_preview_due(4, 7, 10));
  cr_expect(atl__live_preview_due(4, 8, 10));
  cr_expect(atl__live_preview_due(4, 12, 10));
  cr_expect_not(atl__live_preview_due(256, 511, 999));
  cr_expect(atl__live_preview_due(256, 512, 0));
}

Test(live_preview, or_a_second_later_when_they_have_grown) {
  /* HQ's last half: from 256 to 500 the samples never double again. */
  cr_expect_not(
      atl__live_preview_due(256, 264, ATL_LIVE_PREVIEW_MAX_GAP_MS - 1));
  cr_expect(atl__live_preview_due(256, 264, ATL_LIVE_PREVIEW_MAX_GAP_MS));
  /* Not when nothing has changed, however long it has been. */
  cr_expect_not(
      atl__live_preview_due(256, 256, 10 * ATL_LIVE_PREVIEW_MAX_GAP_MS));
}
