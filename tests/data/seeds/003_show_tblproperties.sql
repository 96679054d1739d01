  SHOW TBLPROPERTIES my_mv ('delta.enableRowTracking');
